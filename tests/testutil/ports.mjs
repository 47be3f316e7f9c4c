// Free loopback ports for the browser and OpenAPI tests' child processes (node).
import { createServer } from 'node:net';

const given = new Set();

// A port that is free now and not handed out before by this process, drawn below the
// kernel's ephemeral range so that no outgoing connection takes it before the child binds
// it. (Two draws of one port made the gateway refuse to start: its admin listener may not
// share the client listener's address.)
export async function freePort() {
  for (;;) {
    const port = 20000 + Math.floor(Math.random() * 5000);
    if (given.has(port)) continue;
    const free = await new Promise(done => {
      const s = createServer().once('error', () => done(false));
      s.listen(port, '127.0.0.1', () => s.close(() => done(true)));
    });
    if (free) {
      given.add(port);
      return port;
    }
  }
}
