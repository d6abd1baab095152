package portguard

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// serve runs h behind Listener(perSource, total) and Server on a loopback port.
func serve(t *testing.T, perSource, total int, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := Server("test", Listener(l, perSource, total), h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return l.Addr().String()
}

// closedAtOnce reports whether the server closes c without answering.
func closedAtOnce(t *testing.T, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Read(make([]byte, 1))
	return errors.Is(err, io.EOF) || (err != nil && strings.Contains(err.Error(), "reset"))
}

func TestAConnectionOverALimitIsClosedUnread(t *testing.T) {
	addr := serve(t, 2, 3, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	var held []net.Conn
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	for range 2 {
		held = append(held, dial())
	}
	if c := dial(); !closedAtOnce(t, c) {
		t.Fatal("a third connection from one source was kept (per-source limit 2)")
	}
	// Closing one frees its place.
	_ = held[0].Close()
	time.Sleep(100 * time.Millisecond)
	c := dial()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("after a close: %v; want 200", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("after a close: %d, want 200", resp.StatusCode)
	}
}

func TestARequestLineOverTheBoundIsRefusedBeforeTheHandler(t *testing.T) {
	called := false
	addr := serve(t, 16, 16, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { called = true }))
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = io.WriteString(c, strings.Repeat("M", 1<<20)+" / HTTP/1.1\r\nHost: x\r\n\r\n") }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil {
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("a 1 MiB method: %d, want 431 or the connection closed", resp.StatusCode)
		}
	}
	if called {
		t.Error("the handler ran for a 1 MiB method")
	}
}

// 128 connections from one source, each sending a 1 MiB method, as the flood that got the manager
// OOM-killed on kind through controller-runtime's servers (docs/security.md): the heap they hold
// stays within the bounds' figure, not 128 MiB.
func TestAFloodOfLargeRequestLinesHoldsLittleMemory(t *testing.T) {
	addr := serve(t, PerSource, Total, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	// One line shared by every client, made before the first weighing: the heap measured is the
	// server's. (io.WriteString on a net.Conn copies the string into a new 1 MiB slice per call,
	// held while the write blocks; under load, before the server got to those connections, the
	// clients' copies were weighed as the server's: CI's +19,773 KiB.)
	line := bytes.Repeat([]byte("M"), 1<<20)
	before := heap()
	var conns []net.Conn
	for range 128 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		go func() { _, _ = c.Write(line) }() // never ends its line: held as long as it may be
	}
	time.Sleep(2 * time.Second)
	held := heap() - before
	for _, c := range conns {
		_ = c.Close()
	}
	runtime.KeepAlive(line)
	t.Logf("128 connections × 1 MiB method: heap +%d KiB", held>>10)
	if limit := int64(PerSource) * (MaxHeaderBytes + 16<<10) * 2; held > limit {
		t.Errorf("the flood holds %d KiB, want at most %d KiB (%d connections of one source × the header bound)", held>>10, limit>>10, PerSource)
	}
}

func heap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
