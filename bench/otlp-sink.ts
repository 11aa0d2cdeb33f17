/**
 * A stand-in OTLP endpoint for the tracing benches (bench/proxy.sh): answers every POST
 * /v1/traces 200 with an empty ExportTraceServiceResponse (OTLP/HTTP, binary protobuf: an empty
 * message is zero bytes) and counts the requests and bytes it got, printed when it is stopped.
 * Usage: npx tsx bench/otlp-sink.ts <port>
 */
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0) throw new Error('usage: otlp-sink.ts <port>');
let requests = 0;
let bytes = 0;
const server = createServer((req, res) => {
  req.on('data', (chunk: Buffer) => (bytes += chunk.length));
  req.on('end', () => {
    requests++;
    res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
  });
});
server.listen(port, '127.0.0.1');
const stop = (): void => {
  console.log(`otlp sink: ${requests} export requests, ${bytes} bytes`);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
