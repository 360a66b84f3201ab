package membus_test

import (
	"context"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"

	"github.com/agentchat/agentchat/internal/bus/membus"
	"github.com/agentchat/agentchat/internal/event"
)

// BenchmarkWakeWrite is one token's relay past the bus to a client socket,
// as a parked stream does it (httpapi's detach.go): the publisher wakes the
// subscriber, which drains its queue and writes a frame to a loopback TCP
// connection; the client reads it and only then is the next token
// published, as a paced model's next token comes while the stream waits.
// "goroutine" serves each wake on a goroutine started for it; "direct" on
// the publisher's goroutine (bus.Queue.Wake), with a write that does not
// wait.
func BenchmarkWakeWrite(b *testing.B) {
	for _, mode := range []string{"goroutine", "direct"} {
		b.Run(mode, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				b.Fatal(err)
			}
			defer server.Close()
			raw, _ := server.(syscall.Conn).SyscallConn()
			frame := make([]byte, 200)
			got := make(chan struct{})
			go func() {
				buf := make([]byte, len(frame))
				for {
					if _, err := io.ReadFull(client, buf); err != nil {
						return
					}
					got <- struct{}{}
				}
			}()
			bs := membus.New(0)
			q, _ := bs.Subscribe(context.Background(), "t", "th", 0)
			var mu sync.Mutex
			running, again := false, false
			serve := func() {
				evs, _ := q.Drain(nil)
				for range evs {
					if mode == "direct" {
						_ = raw.Write(func(fd uintptr) bool { _, _ = syscall.Write(int(fd), frame); return true })
					} else {
						_, _ = server.Write(frame)
					}
				}
				event.PutBatch(evs)
			}
			q.Notify(func(direct bool) {
				mu.Lock()
				if running {
					again = true
					mu.Unlock()
					return
				}
				running = true
				mu.Unlock()
				loop := func() {
					for {
						serve()
						mu.Lock()
						if !again {
							running = false
							mu.Unlock()
							return
						}
						again = false
						mu.Unlock()
					}
				}
				if mode == "direct" && direct {
					loop()
					return
				}
				go loop()
			})
			ev := event.Event{Tenant: "t", Thread: "th", Seq: 1}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				_ = bs.Publish(context.Background(), ev)
				<-got
			}
		})
	}
}
