/** One 'close' listener per connection however many queued responses watch it. */
import { expect } from 'chai';
import { Socket } from 'node:net';
import { onConnectionClose } from '../../src/extensions/connection-close.js';

describe('onConnectionClose', () => {
  it('adds one close listener for 50 watchers and calls each that is still watching once', async () => {
    const socket = new Socket();
    const before = socket.listenerCount('close');
    const called: number[] = [];
    const unwatch = Array.from({ length: 50 }, (_, i) => onConnectionClose(socket, () => called.push(i)));
    expect(socket.listenerCount('close') - before).to.equal(1);
    unwatch[3]?.();
    unwatch[3]?.();
    socket.destroy();
    await new Promise((r) => socket.once('close', r));
    expect(called).to.deep.equal(Array.from({ length: 50 }, (_, i) => i).filter((i) => i !== 3));
  });

  it('watches a second connection on its own', async () => {
    const [a, b] = [new Socket(), new Socket()];
    const called: string[] = [];
    onConnectionClose(a, () => called.push('a'));
    onConnectionClose(b, () => called.push('b'));
    a.destroy();
    await new Promise((r) => a.once('close', r));
    expect(called).to.deep.equal(['a']);
    b.destroy();
  });
});
