'use strict';
// A fenced listener in JavaScript on Node.js, run by fenceline as a node
// (docs/node-protocol.md); see README.md beside it for how to run it.
//
// It elects a leader with the reference's Redis keys and Lua: SET NX PX and INCR of the
// token counter in one script, renew and release only while the lease holds our value.
// The leader keeps a local lease deadline on the monotonic clock, taken before the
// acquire or renew was sent, and steps down on its own when it passes. Standbys stay
// subscribed to the release notice and attempt at once when it comes, else when the
// lease's PTTL runs out or after a quarter lease. Each batch is committed with one Lua
// script that refuses a token older than the stored one. The scripts are
// examples/lua/*.lua, the same files the Python node runs. --unfenced drops the fence:
// its broken twin, which the harness must catch.
//
// Needs Debian's node-redis (4.x) and nothing else. Debian's own nodejs finds it in
// /usr/share/nodejs; other builds (NodeSource's, nvm's) need NODE_PATH=/usr/share/nodejs.

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const path = require('path');
const { performance } = require('perf_hooks');

let redis;
try {
  redis = require('redis');
} catch (e) {
  if (e.code !== 'MODULE_NOT_FOUND') throw e;
  process.stderr.write('node-listener: cannot load the redis client: install Debian\'s node-redis ' +
    '(apt-get install -y node-redis) and run with NODE_PATH=/usr/share/nodejs\n');
  process.exit(2);
}

const LUA = path.join(__dirname, '..', 'lua');
const lua = name => fs.readFileSync(path.join(LUA, name + '.lua'), 'utf8');
const SCRIPTS = { acquire: lua('acquire'), renew: lua('renew'), release: lua('release'), commit: lua('commit') };

// Timeout is what a Redis call or a fetch that got no answer in time rejects with.
class Timeout extends Error {
  constructor(ms) {
    super(`no answer in ${ms}ms`);
    this.name = 'Timeout';
  }
}

function withTimeout(p, ms) {
  let timer;
  const t = new Promise((_, reject) => { timer = setTimeout(() => reject(new Timeout(ms)), ms); });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

// Clock is the lease's clock: monotonic, with the offset and rate POST /fault/clock sets.
class Clock {
  constructor() { this.set(0, 1); }
  set(offset, rate) {
    this.real = performance.now() / 1000;
    this.read = this.real + offset;
    this.rate = rate;
  }
  now() { return this.read + (performance.now() / 1000 - this.real) * this.rate; }
}

// wallOrigin is the wall time, in ms, at which performance.now() was 0. Not
// performance.timeOrigin: measured here, a process's timeOrigin can be milliseconds off
// the wall clock (3-6 ms in one of six), and stamps that far apart across nodes order
// one node's operation before another's that it saw. Taken at the instant Date.now()
// ticks to a new millisecond, it is good to a few microseconds, unless the process was
// preempted between the two reads: then it is late by the preemption (5-10 ms seen on a
// loaded machine, and the node's loads stamped after commits they did not see). So the
// least of ten ticks' readings: a preemption only ever makes one larger.
const wallOrigin = (() => {
  performance.now(); // the first call is slow: not inside the measurement
  let best = Infinity;
  for (let i = 0; i < 10; i++) {
    const d = Date.now();
    let t, p;
    do {
      p = performance.now();
      t = Date.now();
    } while (t === d);
    best = Math.min(best, t - p);
  }
  return best;
})();

// wallNanos is the host's wall clock in nanoseconds, as a decimal string: a double cannot
// hold it exactly.
function wallNanos() {
  return (BigInt(Math.round((wallOrigin + performance.now()) * 1000)) * 1000n).toString();
}

// Conn is one connection to Redis, for the recorded operations. A call that gets no
// answer within the timeout closes the connection (a reply that comes later must not be
// read as the next call's), and the next call opens a new one. node-redis's own
// reconnects and offline queue are off: a command is sent once, when it is called, or
// never, as the history says.
class Conn {
  constructor(host, port, timeoutMs) {
    Object.assign(this, { host, port, timeoutMs, client: null, ready: null });
  }

  async call(fn) {
    if (!this.client) {
      const c = redis.createClient({
        socket: { host: this.host, port: this.port, connectTimeout: this.timeoutMs, noDelay: true,
          reconnectStrategy: () => new Error('node-listener: the listener reconnects itself') },
        disableOfflineQueue: true,
      });
      c.on('error', () => this.drop(c)); // a broken connection is replaced on the next call
      this.client = c;
      this.ready = c.connect();
      this.ready.catch(() => {});
    }
    const c = this.client;
    const ready = this.ready;
    try {
      return await withTimeout(ready.then(() => fn(c)), this.timeoutMs);
    } catch (e) {
      this.drop(c);
      throw e;
    }
  }

  drop(c) {
    if (this.client === c) this.client = null;
    c.disconnect().catch(() => {}); // rejects what is still queued on it; closed already is fine
  }

  close() {
    if (this.client) this.drop(this.client);
  }
}

class Node {
  constructor(env, fenced) {
    this.id = env.FENCELINE_NODE_ID;
    this.fenced = fenced;
    const addr = env.FENCELINE_REDIS;
    const colon = addr.lastIndexOf(':');
    this.host = addr.slice(0, colon);
    this.port = Number(addr.slice(colon + 1));
    this.ttl = Number(env.FENCELINE_LEASE_TTL_MS) / 1000;
    this.source = env.FENCELINE_SOURCE.replace(/\/+$/, '');
    this.batch = Number(env.FENCELINE_BATCH || 20);
    this.conn = new Conn(this.host, this.port, this.ttl * 1000 / 4);
    const p = '{' + (env.FENCELINE_ELECTION || 'fenceline') + '}:';
    this.keys = {};
    for (const k of ['lock', 'token', 'released', 'cursor', 'balances', 'sink', 'audit']) this.keys[k] = p + k;
    this.hist = fs.openSync(env.FENCELINE_HISTORY, 'a', 0o644);
    this.boot = crypto.randomBytes(4).toString('hex');
    this.seq = 0;
    this.clock = new Clock();
    this.stopping = false;
    this.sleepers = new Set();
    Object.assign(this, { token: 0, cursor: 0, commits: 0, rejected: 0 });
  }

  record(ev) {
    // One write per line: a killed node leaves no torn line. time goes in as digits.
    const line = JSON.stringify(ev).slice(0, -1) + ',"time":' + wallNanos() + '}\n';
    fs.writeSync(this.hist, line);
  }

  // op records an invoke, runs fn(op id), records its completion, and returns
  // {type, res}: fn returns {type: 'ok'|'fail', res, extra}; a thrown error is 'info'.
  async op(kind, election, fn, invoke = {}) {
    this.seq++;
    const id = `${this.id}/${this.boot}/${election ? 'e' : ''}${this.seq}`;
    this.record({ id, type: 'invoke', kind, node: this.id, ...invoke });
    let out;
    try {
      out = await fn(id);
    } catch (e) {
      out = { type: 'info', res: null, extra: { error: e.message || e.name } };
    }
    this.record({ id, type: out.type, kind, node: this.id, ...invoke, ...out.extra });
    return out;
  }

  eval(script, keys, args) {
    return this.conn.call(c => c.eval(SCRIPTS[script], { keys, arguments: args.map(String) }));
  }

  acquire() {
    return this.op('acquire', true, async () => {
      const t = await this.eval('acquire', [this.keys.lock, this.keys.token], [this.id, Math.round(this.ttl * 1000)]);
      return t ? { type: 'ok', res: t, extra: { token: t } } : { type: 'fail', res: 0, extra: { error: 'not-held' } };
    });
  }

  // held runs renew or release, which act only while the lease holds this term's value.
  held(kind) {
    const value = `${this.id}:${this.token}`;
    return this.op(kind, true, async () => {
      const ok = await this.eval(kind, [this.keys.lock, this.keys.released], [value, Math.round(this.ttl * 1000)]);
      return ok ? { type: 'ok', res: true, extra: {} } : { type: 'fail', res: false, extra: { error: 'not-held' } };
    }, { token: this.token });
  }

  async stepDown(reason) {
    this.seq++;
    this.record({ id: `${this.id}/${this.boot}/e${this.seq}`, type: 'info', kind: 'step-down',
      node: this.id, token: this.token, reason });
    if (reason === 'shutdown' || reason === 'lead-returned') await this.held('release'); // a standby need not wait
    this.token = 0;
  }

  async load() {
    const { type, res } = await this.op('load', false, async () => {
      const [c, t] = await this.conn.call(cl => cl.hmGet(this.keys.cursor, ['cursor', 'token']));
      const cursor = Number(c || 0);
      return { type: 'ok', res: cursor, extra: { cursor, token: Number(t || 0) } };
    });
    if (type === 'ok') this.cursor = res;
    return type === 'ok';
  }

  async commit(events) {
    const from = this.cursor;
    const to = Number(events[events.length - 1].id);
    const args = [null, this.id, this.token, from, to, this.fenced ? '1' : '0'];
    for (const e of events) args.push(e.id, e.from, e.to, e.amount);
    const { type, res } = await this.op('commit', false, async id => {
      args[0] = id; // audited with the attempt: the checker resolves unknown outcomes by it
      const reply = await this.eval('commit', ['cursor', 'balances', 'sink', 'audit'].map(k => this.keys[k]), args);
      const result = String(reply[0]);
      return result === 'ok' ? { type: 'ok', res: result, extra: {} } : { type: 'fail', res: result, extra: { error: result } };
    }, { token: this.token, from, to, events: events.length });
    if (type === 'ok') {
      this.cursor = to;
      this.commits++;
    } else if (type === 'fail') {
      this.rejected++;
    }
    return type === 'info' ? 'unknown' : res;
  }

  async fetch(seconds) {
    const url = `${this.source}/events?order=asc&cursor=${this.cursor}&limit=${this.batch}`;
    const resp = await fetch(url, { signal: AbortSignal.timeout(Math.round(seconds * 1000)) });
    if (!resp.ok) throw new Error(`source answered ${resp.status}`);
    return (await resp.json())._embedded.records;
  }

  // standbyWait is how long a standby waits before its next attempt: until the lease's
  // PTTL runs out or a quarter lease, whichever is sooner (the release notice wakes it
  // earlier). The PTTL is read apart from the acquire, which the Python node shares.
  async standbyWait() {
    const retry = this.ttl / 4;
    try {
      const pttl = await this.conn.call(c => c.pTTL(this.keys.lock));
      if (pttl === -2) return 0; // gone since the attempt: campaign again at once
      if (pttl >= 0) return Math.min(retry, (pttl + 2) / 1000);
    } catch {
      // no answer: the quarter lease
    }
    return retry;
  }

  // sleep waits for the given seconds, or until wake (a release notice, SIGTERM).
  sleep(seconds) {
    return new Promise(resolve => {
      const done = () => {
        clearTimeout(timer);
        this.sleepers.delete(done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, seconds * 1000));
      this.sleepers.add(done);
    });
  }

  wake() {
    for (const done of [...this.sleepers]) done();
  }

  stop() {
    this.stopping = true;
    clearTimeout(this.resubscribe);
    this.wake();
  }

  // subscribe keeps a second connection subscribed to the release notice. It records
  // nothing and does not block. A connection that breaks or cannot be made is replaced by
  // a new client a moment later, never reconnected by node-redis: 4.x's own resubscribe
  // after a reconnect can crash the process on a later reply (redis/node-redis#2876;
  // seen here after Redis restarts). Until it is back, a standby polls.
  subscribe() {
    const sub = redis.createClient({
      socket: { host: this.host, port: this.port, connectTimeout: this.ttl * 1000 / 4,
        reconnectStrategy: () => new Error('node-listener: the listener reconnects itself') },
    });
    let broken = false;
    const again = () => {
      if (broken) return;
      broken = true;
      sub.disconnect().catch(() => {});
      if (!this.stopping) this.resubscribe = setTimeout(() => this.subscribe(), 100);
    };
    sub.on('error', again);
    sub.connect()
      .then(() => sub.subscribe(this.keys.released, () => { if (!this.token) this.wake(); }))
      .catch(again);
  }

  async run() {
    let deadline = 0;
    let renewAt = 0;
    while (!this.stopping) {
      const now = this.clock.now(); // before the request: the lease is counted from here
      if (!this.token) {
        const { type, res } = await this.acquire();
        if (type === 'ok') {
          this.token = res;
          deadline = now + this.ttl * 0.95;
          renewAt = now + this.ttl / 3;
          if (await this.load()) continue;
          await this.stepDown('lead-returned'); // no cursor: let another try
          await this.sleep(this.ttl / 4);
        } else {
          await this.sleep(type === 'fail' ? await this.standbyWait() : this.ttl / 4);
        }
      } else if (now >= deadline) {
        await this.stepDown('lease-expired');
      } else if (now >= renewAt) {
        // The answer is awaited no later than the deadline: a leader whose renewal
        // hangs (a slow link) still steps down on time, as the Go elector's timer makes
        // it. An answer after the deadline extends nothing (the lease may have expired
        // before it); held() records it all the same.
        const renewal = this.held('renew');
        let answer = null;
        renewal.then(r => { answer = r; });
        while (answer === null && this.clock.now() < deadline) await new Promise(r => setTimeout(r, 10));
        const type = answer === null || this.clock.now() >= deadline ? 'late' : answer.type;
        if (type === 'late') {
          await this.stepDown('lease-expired');
        } else if (type === 'ok') {
          deadline = now + this.ttl * 0.95;
          renewAt = now + this.ttl / 3;
        } else if (type === 'fail') {
          await this.stepDown('renew-rejected');
        } else {
          renewAt = now + this.ttl / 10;
        }
      } else {
        let events = null;
        try {
          events = await this.fetch(Math.max(0.05, Math.min(1, deadline - now)));
        } catch {
          // the source is slow or away: try again shortly
        }
        if (!events || events.length === 0) {
          await this.sleep(0.05);
          continue;
        }
        const res = await this.commit(events);
        if (res === 'stale-token') {
          await this.stepDown('lead-returned'); // a newer leader has written: stop
        } else if (res !== 'ok' && !(await this.load())) { // conflict or unknown: read again
          await this.stepDown('lead-returned');
        }
      }
    }
    if (this.token) await this.stepDown('shutdown');
  }

  status() {
    return { id: this.id, role: this.token ? 'leader' : 'follower', token: this.token,
      leader: this.token ? this.id : '', cursor: this.cursor,
      variant: 'node-listener' + (this.fenced ? '' : '-unfenced'), chaos: true,
      commits: this.commits, rejected: this.rejected };
  }
}

// parseDuration parses Go's time.Duration.String() form (1.5s, -300ms, 2m3s, 0s) into seconds.
function parseDuration(s) {
  const units = { ns: 1e-9, us: 1e-6, 'µs': 1e-6, 'μs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };
  const m = /^([+-]?)((?:[0-9]*\.?[0-9]+(?:ns|us|µs|μs|ms|s|m|h))+)$/.exec(s);
  if (!m) throw new Error(`bad duration ${JSON.stringify(s)}`);
  let total = 0;
  for (const [, num, unit] of m[2].matchAll(/([0-9]*\.?[0-9]+)(ns|us|µs|μs|ms|s|m|h)/g)) total += Number(num) * units[unit];
  return m[1] === '-' ? -total : total;
}

function serve(node, addr, addrFile) {
  const reply = (res, code, body) => {
    const b = JSON.stringify(body) + '\n';
    res.writeHead(code, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(b) });
    res.end(b);
  };
  const srv = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://control');
    if (req.method === 'GET' && u.pathname === '/health') return reply(res, 200, { status: 'ok' });
    if (req.method === 'GET' && u.pathname === '/status') return reply(res, 200, node.status());
    if (req.method === 'POST' && u.pathname === '/fault/clock') {
      let offset;
      let rate;
      try {
        offset = parseDuration(u.searchParams.get('offset') ?? '');
        rate = Number(u.searchParams.get('rate'));
        if (u.searchParams.get('rate') === null || !Number.isFinite(rate)) throw new Error('bad rate');
      } catch (e) {
        return reply(res, 400, { error: e.message });
      }
      node.clock.set(offset, rate);
      return reply(res, 200, { offset: u.searchParams.get('offset'), rate });
    }
    return reply(res, 404, { error: 'not found' });
  });
  const colon = addr.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(Number(addr.slice(colon + 1)), addr.slice(0, colon), () => {
      if (addrFile) {
        const a = srv.address();
        fs.writeFileSync(addrFile + '.tmp', `${a.address}:${a.port}\n`);
        fs.renameSync(addrFile + '.tmp', addrFile); // a reader never sees half an address
      }
      resolve(srv);
    });
  });
}

async function main() {
  const node = new Node(process.env, !process.argv.slice(2).includes('--unfenced'));
  process.on('SIGTERM', () => node.stop());
  process.on('SIGINT', () => node.stop());
  const srv = await serve(node, process.env.FENCELINE_CONTROL, process.env.FENCELINE_ADDR_FILE);
  node.subscribe();
  await node.run();
  // Every invoke has its completion by now; what is left open needs no goodbye.
  fs.closeSync(node.hist);
  srv.close();
  node.conn.close();
  process.exit(0);
}

main().catch(e => {
  process.stderr.write(`node-listener: ${e.stack || e}\n`);
  process.exit(1);
});
