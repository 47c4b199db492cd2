// A forwarding proxy for the conformance suite, which has no way to send
// a header of its own: every request to this proxy goes to TARGET with
// Authorization: Bearer TOKEN added. Prints the port it listens on.
import http from "node:http";

const target = new URL(process.env.TARGET);
const token = process.env.TOKEN;
const server = http.createServer((req, res) => {
  const headers = { ...req.headers, host: target.host, authorization: `Bearer ${token}` };
  const out = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers }, (up) => {
    res.writeHead(up.statusCode ?? 502, up.headers);
    up.pipe(res);
  });
  out.on("error", () => {
    res.writeHead(502);
    res.end();
  });
  req.pipe(out);
});
server.listen(Number(process.env.PORT ?? 0), "127.0.0.1", () => console.log(server.address().port));
