#!/usr/bin/env python3
"""A fenced listener in Python, run by fenceline as a node (docs/node-protocol.md).

It elects a leader with the reference's Redis keys and Lua (SET NX PX + INCR, renew and
release only while the lock holds our value), keeps a local lease deadline on its own
clock, and commits each batch with one Lua script that rejects a token older than the
stored one (the scripts are examples/lua/*.lua). --unfenced drops that check: its broken
twin, which the harness must catch. Needs redis-py (Debian: python3-redis).
"""
import json, os, secrets, signal, sys, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import redis

# The Lua of the protocol's election and fenced commit, shared with the Node.js example
# (examples/node-listener) so that both run the same contract.
LUA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lua")


def lua(name):
    with open(os.path.join(LUA, name + ".lua")) as f:
        return f.read()


ACQUIRE, RENEW, RELEASE, COMMIT = (lua(n) for n in ("acquire", "renew", "release", "commit"))


class Clock:
    """The lease's clock: monotonic, with the offset and rate POST /fault/clock sets."""

    def __init__(self):
        self.lock = threading.Lock()
        self.set(0.0, 1.0)

    def set(self, offset, rate):
        with self.lock:
            self.real = time.monotonic()
            self.read, self.rate = self.real + offset, rate

    def now(self):
        with self.lock:
            return self.read + (time.monotonic() - self.real) * self.rate


class Node:
    def __init__(self, env, fenced):
        self.id, self.fenced = env["FENCELINE_NODE_ID"], fenced
        host, port = env["FENCELINE_REDIS"].rsplit(":", 1)
        self.ttl = int(env["FENCELINE_LEASE_TTL_MS"]) / 1000
        self.source = env["FENCELINE_SOURCE"].rstrip("/")
        self.batch = int(env.get("FENCELINE_BATCH") or 20)
        # No retries: a re-sent request is one the history never recorded.
        self.r = redis.Redis(host=host, port=int(port), socket_timeout=self.ttl / 4,
                             socket_connect_timeout=self.ttl / 4, retry_on_timeout=False)
        p = "{" + env.get("FENCELINE_ELECTION", "fenceline") + "}:"
        self.keys = {k: p + k for k in ("lock", "token", "released", "cursor", "balances", "sink", "audit")}
        self.scripts = {n: self.r.register_script(s) for n, s in
                        (("acquire", ACQUIRE), ("renew", RENEW), ("release", RELEASE), ("commit", COMMIT))}
        self.hist = os.open(env["FENCELINE_HISTORY"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.boot, self.seq = secrets.token_hex(4), 0
        self.clock, self.stop = Clock(), threading.Event()
        self.token, self.cursor, self.commits, self.rejected = 0, 0, 0, 0

    def record(self, **ev):
        ev["time"] = time.time_ns()  # host wall clock, as every node's history
        os.write(self.hist, (json.dumps(ev) + "\n").encode())  # one write: no torn line

    def op(self, kind, election, fn, **invoke):
        """Records an invoke, runs fn(op id), records its completion; returns (type, result)."""
        self.seq += 1
        oid = f"{self.id}/{self.boot}/{'e' if election else ''}{self.seq}"
        self.record(id=oid, type="invoke", kind=kind, node=self.id, **invoke)
        try:
            typ, res, extra = fn(oid)
        except (redis.RedisError, OSError) as e:
            typ, res, extra = "info", None, {"error": str(e) or type(e).__name__}
        self.record(id=oid, type=typ, kind=kind, node=self.id, **{**invoke, **extra})
        return typ, res

    def acquire(self):
        def fn(_):
            t = self.scripts["acquire"](keys=[self.keys["lock"], self.keys["token"]],
                                        args=[self.id, int(self.ttl * 1000)])
            return ("ok", t, {"token": t}) if t else ("fail", 0, {"error": "not-held"})
        return self.op("acquire", True, fn)

    def held(self, kind, script, extra_key):
        value = f"{self.id}:{self.token}"
        def fn(_):
            ok = self.scripts[script](keys=[self.keys["lock"], extra_key], args=[value, int(self.ttl * 1000)])
            return ("ok", True, {}) if ok else ("fail", False, {"error": "not-held"})
        return self.op(kind, True, fn, token=self.token)

    def step_down(self, reason):
        self.seq += 1
        self.record(id=f"{self.id}/{self.boot}/e{self.seq}", type="info", kind="step-down",
                    node=self.id, token=self.token, reason=reason)
        if reason in ("shutdown", "lead-returned"):
            self.held("release", "release", self.keys["released"])  # a standby need not wait
        self.token = 0

    def load(self):
        def fn(_):
            c, t = self.r.hmget(self.keys["cursor"], "cursor", "token")
            c, t = int(c or 0), int(t or 0)
            return "ok", c, {"cursor": c, "token": t}
        typ, c = self.op("load", False, fn)
        if typ == "ok":
            self.cursor = c
        return typ == "ok"

    def commit(self, events):
        frm, to = self.cursor, int(events[-1]["id"])
        args = [None, self.id, self.token, frm, to, "1" if self.fenced else "0"]
        for e in events:
            args += [e["id"], e["from"], e["to"], e["amount"]]
        def fn(oid):
            args[0] = oid  # audited with the attempt: the checker resolves unknown outcomes by it
            res = self.scripts["commit"](keys=[self.keys[k] for k in ("cursor", "balances", "sink", "audit")], args=args)
            res = res[0].decode()
            return ("ok", res, {}) if res == "ok" else ("fail", res, {"error": res})
        typ, res = self.op("commit", False, fn, token=self.token, **{"from": frm}, to=to, events=len(events))
        if typ == "ok":
            self.cursor, self.commits = to, self.commits + 1
        elif typ == "fail":
            self.rejected += 1
        return res if typ != "info" else "unknown"

    def fetch(self, timeout):
        url = f"{self.source}/events?order=asc&cursor={self.cursor}&limit={self.batch}"
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.load(resp)["_embedded"]["records"]

    def run(self):
        deadline = renew_at = 0.0
        while not self.stop.is_set():
            now = self.clock.now()
            if not self.token:
                typ, t = self.acquire()
                if typ == "ok":
                    self.token, deadline, renew_at = t, now + self.ttl * 0.95, now + self.ttl / 3
                    if self.load():
                        continue
                    self.step_down("lead-returned")  # no cursor: let another try
                self.stop.wait(self.ttl / 4)
            elif now >= deadline:
                self.step_down("lease-expired")
            elif now >= renew_at:
                typ, _ = self.held("renew", "renew", self.keys["released"])
                if typ == "ok":
                    deadline, renew_at = now + self.ttl * 0.95, now + self.ttl / 3
                elif typ == "fail":
                    self.step_down("renew-rejected")
                else:
                    renew_at = now + self.ttl / 10
            else:
                try:
                    events = self.fetch(max(0.05, min(1.0, deadline - now)))
                except (OSError, ValueError, KeyError):
                    events = None
                if not events:
                    self.stop.wait(0.05)
                    continue
                res = self.commit(events)
                if res == "stale-token":
                    self.step_down("lead-returned")  # a newer leader has written: stop
                elif res != "ok" and not self.load():  # conflict or unknown: read again
                    self.step_down("lead-returned")
        if self.token:
            self.step_down("shutdown")

    def status(self):
        return {"id": self.id, "role": "leader" if self.token else "follower", "token": self.token,
                "leader": self.id if self.token else "", "cursor": self.cursor,
                "variant": "python" + ("" if self.fenced else "-unfenced"), "chaos": True,
                "commits": self.commits, "rejected": self.rejected}


def serve(node, addr, addr_file):
    class Handler(BaseHTTPRequestHandler):
        def reply(self, code, body):
            b = (json.dumps(body) + "\n").encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(b)))
            self.end_headers()
            self.wfile.write(b)

        def do_GET(self):
            path = urlparse(self.path).path
            if path == "/health":
                self.reply(200, {"status": "ok"})
            elif path == "/status":
                self.reply(200, node.status())
            else:
                self.reply(404, {"error": "not found"})

        def do_POST(self):
            u = urlparse(self.path)
            if u.path != "/fault/clock":
                return self.reply(404, {"error": "not found"})
            q = parse_qs(u.query)
            try:
                offset, rate = parse_duration(q["offset"][0]), float(q["rate"][0])
            except (KeyError, ValueError) as e:
                return self.reply(400, {"error": str(e)})
            node.clock.set(offset, rate)
            self.reply(200, {"offset": q["offset"][0], "rate": rate})

        def log_message(self, *args):
            pass

    host, port = addr.rsplit(":", 1)
    srv = ThreadingHTTPServer((host, int(port)), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    if addr_file:
        with open(addr_file + ".tmp", "w") as f:
            f.write("%s:%d\n" % srv.server_address[:2])
        os.rename(addr_file + ".tmp", addr_file)  # a reader never sees half an address


def parse_duration(s):
    """Parses Go's time.Duration.String() form: 1.5s, -300ms, 2m3s, 0s."""
    units = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    sign, total, num = -1 if s.startswith("-") else 1, 0.0, ""
    s, i = s.lstrip("+-"), 0
    while i < len(s):
        if s[i].isdigit() or s[i] == ".":
            num += s[i]; i += 1; continue
        u = next(u for u in sorted(units, key=len, reverse=True) if s.startswith(u, i))
        total, num, i = total + float(num) * units[u], "", i + len(u)
    if num:
        raise ValueError("duration %r has no unit" % s)
    return sign * total


def main():
    node = Node(os.environ, fenced="--unfenced" not in sys.argv[1:])
    signal.signal(signal.SIGTERM, lambda *_: node.stop.set())
    signal.signal(signal.SIGINT, lambda *_: node.stop.set())
    serve(node, os.environ["FENCELINE_CONTROL"], os.environ.get("FENCELINE_ADDR_FILE"))
    node.run()


if __name__ == "__main__":
    main()
