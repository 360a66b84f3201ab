// Command tcpproxy is the cluster tests' TCP proxy in front of PostgreSQL,
// which a test cuts to take the database away from a replica. It runs in a
// process of its own, built without -race (clustertest.NewProxy starts it),
// because the replicas' every query passes through it: served from the
// race-instrumented test process on a loaded CI box, a replica could not
// register through it within 30 s.
//
// It listens on two ephemeral 127.0.0.1 ports, the proxy's and its
// control's, and writes one line to stdout,
//
//	tcpproxy listening on 127.0.0.1:PORT control http://127.0.0.1:PORT
//
// then serves until its stdin ends (the test's end: see clustertest).
// Control, each answering 204 once done:
//
//	POST /cut      close every connection (reset, as from a dead server) and refuse new ones
//	POST /restore  let connections through again
//	POST /refused  wait until a connection was refused since the last cut
//	               (until the request ends, at the latest)
package main

import (
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

func main() {
	target := flag.String("target", "", "host:port to forward to")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("tcpproxy: ")
	if *target == "" {
		log.Fatal("-target is required")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	ctl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	p := &proxy{target: *target, changed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	go p.accept(ln)

	mux := http.NewServeMux()
	mux.HandleFunc("POST /cut", func(w http.ResponseWriter, r *http.Request) {
		p.cut()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /restore", func(w http.ResponseWriter, r *http.Request) {
		p.restore()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /refused", func(w http.ResponseWriter, r *http.Request) {
		if !p.awaitRefused(r.Context().Done()) {
			w.WriteHeader(http.StatusGatewayTimeout)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})

	go func() {
		// The test's end: it closed the pipe, or died.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Printf("tcpproxy listening on %s control http://%s\n", ln.Addr(), ctl.Addr())
	log.Fatal(http.Serve(ctl, mux))
}

// proxy forwards connections to target unless it is cut.
type proxy struct {
	target string

	mu      sync.Mutex
	isCut   bool
	refused int           // connections refused since the last cut
	changed chan struct{} // closed and replaced when refused grows
	conns   map[net.Conn]struct{}
}

func (p *proxy) accept(ln net.Listener) {
	for {
		in, err := ln.Accept()
		if err != nil {
			log.Fatal(err)
		}
		p.mu.Lock()
		if p.isCut {
			p.refused++
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
			in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			p.mu.Unlock()
			log.Printf("dial %s: %v", p.target, err)
			in.Close()
			continue
		}
		p.conns[in], p.conns[out] = struct{}{}, struct{}{}
		p.mu.Unlock()
		go p.pipe(in, out)
		go p.pipe(out, in)
	}
}

func (p *proxy) pipe(dst, src net.Conn) {
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.isCut = true
	p.refused = 0
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // a reset, as from a dead server
		}
		c.Close()
	}
}

func (p *proxy) restore() {
	p.mu.Lock()
	p.isCut = false
	p.mu.Unlock()
}

// awaitRefused reports whether a connection was refused since the last cut,
// waiting for one until stop is closed.
func (p *proxy) awaitRefused(stop <-chan struct{}) bool {
	for {
		p.mu.Lock()
		n, changed := p.refused, p.changed
		p.mu.Unlock()
		if n > 0 {
			return true
		}
		select {
		case <-changed:
		case <-stop:
			return false
		}
	}
}
