//go:build failpoints

package failpoint

import (
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

func arm(t *testing.T, name, spec string) {
	t.Helper()
	if _, err := Arm(name, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(DisarmAll)
}

func hitCount(name string) int64 {
	for _, s := range Status() {
		if s.Name == name {
			return s.Hits
		}
	}
	return -1
}

func TestUnarmedHitPasses(t *testing.T) {
	if err := Hit(RenewBeforeSend); err != nil {
		t.Fatal(err)
	}
	arm(t, AcquireBeforeReply, "error")
	if err := Hit(RenewBeforeSend); err != nil { // another point is armed, not this one
		t.Fatal(err)
	}
}

func TestErrorOnNextNHits(t *testing.T) {
	arm(t, RenewBeforeSend, "2*error")
	for i := range 2 {
		if err := Hit(RenewBeforeSend); !errors.Is(err, ErrInjected) {
			t.Fatalf("hit %d: %v, want ErrInjected", i+1, err)
		}
	}
	if err := Hit(RenewBeforeSend); err != nil {
		t.Fatalf("third hit: %v, want nil (armed for two)", err)
	}
	if n := hitCount(RenewBeforeSend); n < 2 {
		t.Errorf("hits %d, want >= 2", n)
	}
}

func TestSleep(t *testing.T) {
	arm(t, ReleaseBeforeSend, "sleep(200ms)")
	start := time.Now()
	if err := Hit(ReleaseBeforeSend); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("slept %v, want >= 200ms", d)
	}
}

func TestBlockUntilDisarmed(t *testing.T) {
	arm(t, ListenerBeforeCommit, "block")
	done := make(chan error, 1)
	go func() { done <- Hit(ListenerBeforeCommit) }()
	select {
	case err := <-done:
		t.Fatalf("the hit returned while armed: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := Disarm(ListenerBeforeCommit); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the hit stayed blocked after Disarm")
	}
}

// exit is run in a child process: the test binary itself, told by the environment.
func TestExit(t *testing.T) {
	if os.Getenv("FAILPOINT_EXIT_CHILD") == "1" {
		if _, err := Arm(AcquireAfterWin, "exit(7)"); err != nil {
			os.Exit(3)
		}
		_ = Hit(AcquireAfterWin)
		os.Exit(0) // not reached if the failpoint fired
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestExit$")
	cmd.Env = append(os.Environ(), "FAILPOINT_EXIT_CHILD=1")
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 7 {
		t.Fatalf("child: %v, want exit status 7", err)
	}
}

func BenchmarkHitUnarmed(b *testing.B) {
	for b.Loop() {
		_ = Hit(RenewBeforeSend)
	}
}
