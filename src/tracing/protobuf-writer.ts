/**
 * A growing buffer with protobuf's primitive writes (the wire format's varints, fixed-width
 * numbers and length-delimited fields), for ./otlp-protobuf.ts. Lengths are written after what
 * they measure: one byte is reserved, and what follows is moved only when it is 128 bytes or more.
 */
const TWO_POW_32 = 4_294_967_296;

export class ProtobufWriter {
  private buffer: Buffer;
  pos = 0;

  constructor(initialSize = 65_536) {
    this.buffer = Buffer.allocUnsafe(initialSize);
  }

  get length(): number {
    return this.pos;
  }

  /** Forgets what was written after `pos` (a span that could not be encoded whole). */
  truncate(pos: number): void {
    this.pos = pos;
  }

  /** The bytes written, as a view of this writer's buffer. */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.pos);
  }

  private ensure(more: number): void {
    const needed = this.pos + more;
    if (needed <= this.buffer.length) return;
    let size = this.buffer.length * 2;
    while (size < needed) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buffer.copy(grown, 0, 0, this.pos);
    this.buffer = grown;
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  /** A varint of a whole number; a negative one as its 64-bit two's complement (10 bytes), as protobuf's int64. */
  varint(value: number): void {
    this.ensure(10);
    const b = this.buffer;
    if (value >= 0 && value <= 0xffff_ffff) {
      let v = value >>> 0;
      while (v > 127) {
        b[this.pos++] = (v & 127) | 128;
        v >>>= 7;
      }
      b[this.pos++] = v;
      return;
    }
    const abs = Math.abs(value);
    let low = abs >>> 0;
    let high = (abs / TWO_POW_32) >>> 0;
    if (value < 0) {
      low = ~low >>> 0;
      high = ~high >>> 0;
      low = (low + 1) >>> 0;
      if (low === 0) high = (high + 1) >>> 0;
    }
    while (high > 0 || low > 127) {
      b[this.pos++] = (low & 127) | 128;
      low = ((low >>> 7) | (high << 25)) >>> 0;
      high >>>= 7;
    }
    b[this.pos++] = low & 127;
  }

  fixed32(value: number): void {
    this.ensure(4);
    this.buffer.writeUInt32LE(value >>> 0, this.pos);
    this.pos += 4;
  }

  fixed64(low: number, high: number): void {
    this.ensure(8);
    this.buffer.writeUInt32LE(low >>> 0, this.pos);
    this.buffer.writeUInt32LE(high >>> 0, this.pos + 4);
    this.pos += 8;
  }

  double(value: number): void {
    this.ensure(8);
    this.buffer.writeDoubleLE(value, this.pos);
    this.pos += 8;
  }

  /** A string as its UTF-8 bytes, length first (written after the bytes, moved only past 127 bytes). */
  string(value: string): void {
    const start = this.startLengthDelimited();
    this.ensure(value.length * 3);
    this.pos += this.buffer.write(value, this.pos, 'utf8');
    this.finishLengthDelimited(start);
  }

  bytesField(value: Uint8Array): void {
    this.varint(value.length);
    this.ensure(value.length);
    this.buffer.set(value, this.pos);
    this.pos += value.length;
  }

  /** An id given in hex (a trace or span id), as its bytes. */
  hexBytes(hex: string): void {
    const length = hex.length >>> 1;
    this.varint(length);
    this.ensure(length);
    const written = this.buffer.write(hex, this.pos, length, 'hex');
    // Buffer stops at the first character that is not hex: zeros then, never stale bytes (the SDK's ids are always hex).
    if (written !== length) this.buffer.fill(0, this.pos + written, this.pos + length);
    this.pos += length;
  }

  /** Raw bytes already encoded (a message's fields). */
  raw(value: Uint8Array): void {
    this.ensure(value.length);
    this.buffer.set(value, this.pos);
    this.pos += value.length;
  }

  /** Reserves one byte for a length: most of svc's messages are under 128 bytes. */
  startLengthDelimited(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** Writes the length of what follows `start`, moving it when the length needs more than one byte. */
  finishLengthDelimited(start: number): void {
    const length = this.pos - start - 1;
    if (length < 128) {
      this.buffer[start] = length;
      return;
    }
    const size = varintSize(length);
    this.ensure(size - 1);
    this.buffer.copy(this.buffer, start + size, start + 1, this.pos);
    this.pos += size - 1;
    let v = length;
    let at = start;
    while (v > 127) {
      this.buffer[at++] = (v & 127) | 128;
      v >>>= 7;
    }
    this.buffer[at] = v;
  }
}

function varintSize(value: number): number {
  let size = 1;
  for (let v = value >>> 7; v > 0; v >>>= 7) size++;
  return size;
}
