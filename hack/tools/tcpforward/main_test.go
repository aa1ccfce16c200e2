package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckListen(t *testing.T) {
	for _, tc := range []struct {
		listen  string
		wantErr string
	}{
		{listen: "127.0.0.1:6443"},
		{listen: "127.0.0.2:6443"},
		{listen: "[::1]:6443"},
		{listen: "10.244.0.1:6443"},
		{listen: "0.0.0.0:6443", wantErr: "neither loopback nor in 10.244.0.0/24"},
		{listen: ":6443", wantErr: "must be an IP address"},
		{listen: "192.0.2.2:6443", wantErr: "neither loopback nor in 10.244.0.0/24"},
		{listen: "10.245.0.1:6443", wantErr: "neither loopback nor in 10.244.0.0/24"},
		{listen: "localhost:6443", wantErr: "must be an IP address"},
		{listen: "10.244.0.1", wantErr: "missing port"},
	} {
		t.Run(tc.listen, func(t *testing.T) {
			err := checkListen(tc.listen, "10.244.0.0/24")
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
	assert.ErrorContains(t, checkListen("127.0.0.1:1", "nonsense"), "--allow-cidr")
}

// startForwarder runs a forwarder on a loopback port to upstream until the test ends.
func startForwarder(t *testing.T, upstream string) (addr string, stop func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	f := &forwarder{upstream: upstream, logger: slog.New(slog.DiscardHandler)}
	go func() { done <- f.serve(ctx, ln) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Error("forwarder did not stop")
		}
	}
	t.Cleanup(stop)
	return ln.Addr().String(), stop
}

// An echo upstream that answers after the client has closed its half: the half-close must travel
// through the forwarder, and the answer back.
func TestForwardHalfClose(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = up.Close() })
	go func() {
		for {
			c, err := up.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c) // until the client's half-close
				_, _ = c.Write(append([]byte("echo:"), b...))
			}()
		}
	}()
	addr, _ := startForwarder(t, up.Addr().String())

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Write([]byte("hello"))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite())
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, "echo:hello", string(got))
}

// An unreachable upstream closes the client's connection instead of leaving it hanging.
func TestForwardUpstreamDown(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	dead := up.Addr().String()
	require.NoError(t, up.Close())
	addr, _ := startForwarder(t, dead)

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Read(make([]byte, 1))
	assert.True(t, errors.Is(err, io.EOF) || isReset(err), "want EOF or reset, got %v", err)
}

// Stopping the forwarder closes the connections it holds open (an API server watch, say), so
// their clients see the end and reconnect.
func TestStopClosesOpenConnections(t *testing.T) {
	up, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = up.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := up.Accept()
		if err == nil {
			accepted <- c // held open, never answered
		}
	}()
	addr, stop := startForwarder(t, up.Addr().String())

	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	select {
	case u := <-accepted:
		defer u.Close()
	case <-time.After(10 * time.Second):
		t.Fatal("the forwarder never dialled upstream")
	}
	stop()
	require.NoError(t, c.SetDeadline(time.Now().Add(10*time.Second)))
	_, err = c.Read(make([]byte, 1))
	assert.True(t, errors.Is(err, io.EOF) || isReset(err), "want EOF or reset, got %v", err)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && !op.Timeout()
}
