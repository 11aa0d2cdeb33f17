/**
 * The design card's koa-proxies 0.12.4, measured once for docs/benchmarks.md (bench/proxy.sh
 * with KOA_PROXIES=1): a bare Koa 3 app proxying /ext/* to the backend with its defaults (a new
 * upstream connection per request), no auth, one process. Not used by svc.
 * Usage: node --import tsx bench/koa-proxies-gateway.ts <port> <backend-url>
 */
import Koa from 'koa';
import proxy from 'koa-proxies';

const [portText, target] = process.argv.slice(2);
if (portText === undefined || target === undefined) throw new Error('usage: koa-proxies-gateway <port> <backend-url>');
const app = new Koa();
app.use(proxy('/ext', { target, changeOrigin: true, rewrite: (path) => path.replace(/^\/ext/, '') }));
app.listen(Number(portText), '127.0.0.1');
