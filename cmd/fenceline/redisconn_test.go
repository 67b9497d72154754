package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"math/big"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fenceline/fenceline/election"
	"github.com/fenceline/fenceline/internal/redisserver"
	"github.com/fenceline/fenceline/listener"
	"github.com/fenceline/fenceline/node/redisconn"
	"github.com/fenceline/fenceline/source"
)

// nodeACL is the least privilege a node needs (README "Secrets, TLS and ACLs"): the
// election's keys and channel, and the commands the node sends or its scripts call.
const nodeACL = "~{fenceline}:* &{fenceline}:* +evalsha +eval +subscribe +ping " +
	"+get +set +incr +pttl +pexpire +del +publish +hmget +xadd +time +hincrby +rpush +hset +hget +type"

// The password is never printed: not by -h, not by a flag typo (both print the flag
// defaults, which end up in service logs), for any command that takes it.
func TestSecretNeverPrinted(t *testing.T) {
	const secret = "s3cr3t-Pa55word-7f3a"
	t.Setenv(passwordEnv, secret)
	for _, args := range [][]string{
		{"node", "-h"},
		{"node", "--id", "n1", "--lease-tt", "1s"},
		{"node", "--redis-passwrd", "x"},
		{"status", "-h"},
		{"status", "--redis-usr", "u"},
	} {
		code, stdout, stderr := runCmd(args...)
		if strings.Contains(stdout+stderr, secret) {
			t.Errorf("fenceline %s (exit %d) printed the password:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		if args[1] == "-h" {
			if code != exitOK || !strings.Contains(stderr, "$"+passwordEnv) || !strings.Contains(stderr, "visible to every user in ps") {
				t.Errorf("fenceline %s: exit %d; want 0 and help naming $%s and ps:\n%s", strings.Join(args, " "), code, passwordEnv, stderr)
			}
		} else if code != exitUsage {
			t.Errorf("fenceline %s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}

// Bad connection options are usage errors, one line each, for node and status alike.
func TestRedisConnUsageErrors(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(passwordEnv, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--redis", "no-port"}, "want host:port"},
		{[]string{"--redis-tls-cert", "c.pem"}, "--redis-tls-cert and --redis-tls-key go together"},
		{[]string{"--redis-user", "u"}, "needs a password"},
		{[]string{"--redis-tls-ca", filepath.Join(dir, "missing.pem")}, "no such file"},
		{[]string{"--redis-tls-ca", notPEM}, "no PEM certificate"},
		{[]string{"--redis-tls-cert", notPEM, "--redis-tls-key", notPEM}, "--redis-tls-cert/--redis-tls-key"},
	} {
		for _, cmd := range []string{"node", "status"} {
			args := append([]string{cmd}, tc.args...)
			if cmd == "node" {
				args = append(args, "--id", "n1", "--control", "127.0.0.1:0")
			}
			code, _, stderr := runCmd(args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("fenceline %s: exit %d, stderr %q; want 2 and one line with %q", strings.Join(args, " "), code, stderr, tc.want)
			}
		}
	}
}

// requirePassword makes the Redis server at addr, which has no password, require pw.
func requirePassword(t *testing.T, addr, pw string) {
	t.Helper()
	admin := election.NewClient(addr)
	defer admin.Close()
	if err := admin.ConfigSet(context.Background(), "requirepass", pw).Err(); err != nil {
		t.Fatal(err)
	}
}

// fenceline status reads the password from the variable (it used to ignore it and get
// NOAUTH), and from --redis-password.
func TestStatusPassword(t *testing.T) {
	srv := redisserver.New(t)
	requirePassword(t, srv.Addr(), "pw-123")
	t.Setenv(passwordEnv, "")
	if code, _, stderr := runCmd("status", "--redis", srv.Addr()); code != exitUnknown || !strings.Contains(stderr, "NOAUTH") {
		t.Errorf("no password: exit %d, stderr %q; want 3 and NOAUTH", code, stderr)
	}
	if code, _, stderr := runCmd("status", "--redis", srv.Addr(), "--redis-password", "pw-123"); code != exitOK {
		t.Errorf("--redis-password: exit %d, stderr %q", code, stderr)
	}
	t.Setenv(passwordEnv, "pw-123")
	if code, stdout, stderr := runCmd("status", "--redis", srv.Addr()); code != exitOK || !strings.Contains(stdout, `"election": "fenceline"`) {
		t.Errorf("$%s: exit %d, stdout %q, stderr %q", passwordEnv, code, stdout, stderr)
	}
}

// tlsFiles are PEM files of a test CA, a server certificate for 127.0.0.1 and a client
// certificate, all signed by the CA.
type tlsFiles struct{ ca, serverCert, serverKey, clientCert, clientKey string }

func writeTLSFiles(t *testing.T, dir string) tlsFiles {
	t.Helper()
	now := time.Now()
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	writePEM := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeKey := func(name string, k *ecdsa.PrivateKey) string {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(name, "PRIVATE KEY", der)
	}
	caKey := newKey()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fenceline test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: ips, DNSNames: []string{"localhost"},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	srvDER, srvKey := leaf(2, "redis", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	cliDER, cliKey := leaf(3, "fenceline-node", x509.ExtKeyUsageClientAuth, nil)
	return tlsFiles{
		ca:         writePEM("ca.pem", "CERTIFICATE", caDER),
		serverCert: writePEM("redis.pem", "CERTIFICATE", srvDER),
		serverKey:  writeKey("redis.key", srvKey),
		clientCert: writePEM("client.pem", "CERTIFICATE", cliDER),
		clientKey:  writeKey("client.key", cliKey),
	}
}

// startTLSRedis starts a redis-server that listens only on TLS (no plain port) and
// requires client certificates (tls-auth-clients yes, Redis's default). It returns the
// address and a client with the CA and the client certificate, as the default user.
func startTLSRedis(t *testing.T, files tlsFiles) string {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Fatal(redisserver.ErrNotInstalled)
	}
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command("redis-server",
		"--bind", "127.0.0.1", "--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", files.serverCert, "--tls-key-file", files.serverKey,
		"--tls-ca-cert-file", files.ca, "--tls-auth-clients", "yes",
		"--dir", dir, "--save", "", "--appendonly", "no", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := tlsClient(t, addr, files, "", "")
	deadline := time.Now().Add(10 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
			t.Fatalf("redis-server with TLS exited at start:\n%s", log)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("redis-server with TLS did not answer within 10s")
		}
	}
	return addr
}

// tlsClient is a client of the TLS Redis built by the same code as the node's.
func tlsClient(t *testing.T, addr string, files tlsFiles, user, password string) redis.UniversalClient {
	t.Helper()
	fs := flag.NewFlagSet("tls", flag.ContinueOnError)
	conn := redisconn.Add(fs)
	if err := fs.Parse([]string{"--redis", addr, "--redis-user", user, "--redis-password", password,
		"--redis-tls-ca", files.ca, "--redis-tls-cert", files.clientCert, "--redis-tls-key", files.clientKey}); err != nil {
		t.Fatal(err)
	}
	c, err := conn.Client()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// syncBuf is a bytes.Buffer safe for a node's concurrent log writers.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node elects and commits through a Redis that speaks only TLS with client
// certificates, as an ACL user allowed only the election's keys and channel and the
// commands the node uses (nodeACL, the README's least privilege); fenceline status reads
// it the same way. The user can do nothing else.
func TestNodeOverTLSWithLeastPrivilegeACL(t *testing.T) {
	files := writeTLSFiles(t, t.TempDir())
	addr := startTLSRedis(t, files)
	ctx := context.Background()
	def := tlsClient(t, addr, files, "", "")
	for _, cmd := range [][]any{
		append([]any{"ACL", "SETUSER", "node", "reset", "on", ">node-pw"}, splitAny(nodeACL)...),
		{"ACL", "SETUSER", "admin", "on", ">admin-pw", "~*", "&*", "+@all"},
		{"ACL", "SETUSER", "default", "off"},
	} {
		if err := def.Do(ctx, cmd...).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	admin := tlsClient(t, addr, files, "admin", "admin-pw")

	// What the node's user may not do.
	nodeUser := tlsClient(t, addr, files, "node", "node-pw")
	for _, cmd := range [][]any{
		{"SET", "other", "1"}, {"GET", "{other}:token"}, {"FLUSHALL"}, {"CONFIG", "GET", "*"},
		{"KEYS", "*"}, {"SUBSCRIBE", "elsewhere"},
	} {
		if err := nodeUser.Do(ctx, cmd...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("node user %v: err %v, want NOPERM", cmd, err)
		}
	}
	// Without a client certificate, Redis refuses the connection.
	bare := redis.NewClient(&redis.Options{Addr: addr, Username: "node", Password: "node-pw", MaxRetries: -1,
		TLSConfig: &tls.Config{ServerName: "127.0.0.1", RootCAs: mustPool(t, files.ca)}})
	defer bare.Close()
	if err := bare.Ping(ctx).Err(); err == nil {
		t.Error("a client without a certificate was let in")
	}

	srcServer, err := source.NewServer(source.Config{})
	if err != nil {
		t.Fatal(err)
	}
	src := httptest.NewServer(srcServer.Handler())
	defer src.Close()
	t.Setenv(passwordEnv, "node-pw")
	tlsArgs := []string{"--redis", addr, "--redis-user", "node", "--redis-tls-ca", files.ca,
		"--redis-tls-cert", files.clientCert, "--redis-tls-key", files.clientKey}
	nctx, cancel := context.WithCancel(ctx)
	var logs syncBuf
	exited := make(chan int, 1)
	go func() {
		exited <- runNodeContext(nctx, append([]string{"--id", "n1", "--source", src.URL, "--lease-ttl", "4s",
			"--control", "127.0.0.1:0", "--batch", "50"}, tlsArgs...), &logs)
	}()
	keys := listener.KeysFor("")
	deadline := time.Now().Add(20 * time.Second)
	for {
		cur, _ := admin.HGet(ctx, keys.Cursor, "cursor").Int64()
		if cur >= 200 {
			break
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("the node committed up to %d in 20s; log:\n%s", cur, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	code, stdout, stderr := runCmd(append([]string{"status"}, tlsArgs...)...)
	var st statusOutput
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil || (st.Leader != "n1" && st.Leader != "") || st.Cursor < 200 {
		t.Errorf("status over TLS as the node user: exit %d, %q %q", code, stdout, stderr)
	}
	cancel()
	if code := <-exited; code != exitOK {
		t.Errorf("node exit %d", code)
	}
	// No command was refused: the ACL is enough. (A request timing out on a loaded machine
	// is not what this test is about.)
	for _, bad := range []string{"NOPERM", "WRONGPASS", "NOAUTH"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("node log has %s:\n%s", bad, logs.String())
		}
	}
	// The release on shutdown went through the ACL too.
	if n, err := admin.Exists(ctx, election.LockKey("")).Result(); err != nil || n != 0 {
		t.Errorf("lock still held after a graceful stop: %d %v", n, err)
	}
	if n, _ := admin.XLen(ctx, keys.Audit).Result(); n == 0 {
		t.Error("no audit entries")
	}
}

func splitAny(s string) []any {
	var out []any
	for _, f := range strings.Fields(s) {
		out = append(out, f)
	}
	return out
}

func mustPool(t *testing.T, caFile string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	p.AppendCertsFromPEM(b)
	return p
}

// docs/security.md (where the README sends readers) documents exactly the ACL the TLS
// test proves sufficient.
func TestReadmeDocumentsNodeACL(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "ACL SETUSER fenceline-node reset on >PASSWORD "+nodeACL+"\n") {
		t.Errorf("docs/security.md does not document the node's ACL as %q", nodeACL)
	}
}

// TestHelperProcess is not a test: run as a subprocess by helperCmd, it runs fenceline
// with the arguments after "--", so that what the process itself writes to its stderr
// (go-redis's default logger included) can be read.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("FENCELINE_HELPER_PROCESS") != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

func helperCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^TestHelperProcess$", "--"}, args...)...)
	cmd.Env = append(os.Environ(), "FENCELINE_HELPER_PROCESS=1")
	return cmd
}

// fenceline status on an unreachable Redis says so in one line: go-redis's own
// plain-text log line used to come first.
func TestStatusUnreachableOneLine(t *testing.T) {
	port, err := redisserver.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := helperCmd("status", "--redis", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), "--timeout", "1s")
	cmd.Stderr = &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitUnknown {
		t.Fatalf("exit %v, want 3; stderr %q", err, stderr.String())
	}
	if lines := strings.Split(strings.TrimSpace(stderr.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "fenceline status: ") {
		t.Errorf("stderr %q, want one line", stderr.String())
	}
}
