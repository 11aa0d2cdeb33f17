import { expect } from 'chai';
import { ProtobufWriter } from '../../src/tracing/protobuf-writer.js';

const hexOf = (write: (w: ProtobufWriter) => void, initialSize = 2): string => {
  const w = new ProtobufWriter(initialSize);
  write(w);
  return w.bytes().toString('hex');
};

describe('tracing: the protobuf writer', function () {
  it('writes varints as the wire format says, a negative one as ten bytes of two\'s complement, and past 32 bits', function () {
    expect(hexOf((w) => w.varint(0))).to.equal('00');
    expect(hexOf((w) => w.varint(1))).to.equal('01');
    expect(hexOf((w) => w.varint(300))).to.equal('ac02');
    expect(hexOf((w) => w.varint(0xffff_ffff))).to.equal('ffffffff0f');
    expect(hexOf((w) => w.varint(2 ** 32))).to.equal('8080808010');
    expect(hexOf((w) => w.varint(Number.MAX_SAFE_INTEGER))).to.equal('ffffffffffffff0f');
    expect(hexOf((w) => w.varint(-1))).to.equal('ffffffffffffffffff01');
    expect(hexOf((w) => w.varint(-2))).to.equal('feffffffffffffffff01');
  });

  it('writes a length before what it measures, moving it when it needs two or three bytes, and grows its buffer as it goes', function () {
    for (const [size, prefix] of [[127, '7f'], [128, '8001'], [16_383, 'ff7f'], [16_384, '808001']] as const) {
      const w = new ProtobufWriter(4);
      w.tag(1, 2);
      w.string('x'.repeat(size));
      w.fixed32(0xdeadbeef);
      const bytes = w.bytes();
      expect(bytes.subarray(0, 1 + prefix.length / 2).toString('hex')).to.equal(`0a${prefix}`);
      expect(bytes.length).to.equal(1 + prefix.length / 2 + size + 4);
      expect(bytes.subarray(-4).toString('hex')).to.equal('efbeadde');
      expect(bytes.subarray(1 + prefix.length / 2, -4).toString('latin1')).to.equal('x'.repeat(size));
    }
  });

  it('writes strings as UTF-8 with their byte length (a lone surrogate as U+FFFD, as TextEncoder does)', function () {
    expect(hexOf((w) => w.string('é€😀'))).to.equal('09c3a9e282acf09f9880');
    expect(hexOf((w) => w.string('a\ud800b'))).to.equal(`05${Buffer.from(new TextEncoder().encode('a\ud800b')).toString('hex')}`);
    expect(hexOf((w) => w.string(''))).to.equal('00');
  });

  it('writes ids from hex, zeros (never the buffer\'s old bytes) where a character is not hex', function () {
    expect(hexOf((w) => w.hexBytes('0af7651916cd43dd'))).to.equal('080af7651916cd43dd');
    const w = new ProtobufWriter(64);
    w.raw(Buffer.alloc(40, 0xaa));
    w.truncate(0);
    w.hexBytes('abzz1234');
    expect(w.bytes().toString('hex')).to.equal('04ab000000');
  });

  it('writes fixed-width numbers little-endian and doubles as IEEE 754', function () {
    expect(hexOf((w) => w.fixed64(0x04030201, 0x08070605))).to.equal('0102030405060708');
    expect(hexOf((w) => w.double(1.5))).to.equal('000000000000f83f');
  });
});
