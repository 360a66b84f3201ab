// Command fakemodel serves the cluster tests' fake model, a fakeupstream
// OpenAI-compatible upstream, from a process of its own. clustertest.StartModel
// builds it without -race and starts it for a test, so the replicas' model
// answers do not wait on the race-instrumented test process getting a CPU:
// served from that process, on a loaded two-core CI box, 79 of 500 streams
// had sent no headers within a minute.
//
// It listens on an ephemeral 127.0.0.1 port and writes one line to stdout,
//
//	fakemodel listening on http://127.0.0.1:PORT
//
// then serves until its stdin ends: the test holds the other end of that
// pipe, so the process exits when the test kills it, and when the test
// process dies without a cleanup.
//
// Flags choose the answers (see fakeupstream.Options): -tokens, -delay, and
// a hold: with -hold, streams stop after their first -hold-after frames
// until POST /control/release, which releases every held stream and all
// later ones. -hold-input and -hold-prefix narrow the hold to the answers
// whose input (the request's last user message) is that text, or starts
// with it; every other answer streams through.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/agentchat/agentchat/internal/llm/fakeupstream"
)

func main() {
	tokens := flag.Int("tokens", 20, "tokens in an answer (a request's max_tokens wins)")
	delay := flag.Duration("delay", 0, "pace: the time between two tokens")
	hold := flag.Bool("hold", false, "hold streams after -hold-after frames until POST /control/release")
	holdAfter := flag.Int("hold-after", 1, "frames a held stream sends before it waits")
	holdInput := flag.String("hold-input", "", "with -hold: hold only the answers to this input")
	holdPrefix := flag.String("hold-prefix", "", "with -hold: hold only the answers to inputs with this prefix")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("fakemodel: ")

	released := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(released) }) }

	// Nothing reads the requests back across the process boundary: record none.
	opts := fakeupstream.Options{Tokens: *tokens, Delay: *delay, DiscardRequests: true}
	model := http.Handler(fakeupstream.OpenAIHandler(opts))
	if *hold {
		free := model
		opts.Hold, opts.HoldAfter = released, *holdAfter
		held := fakeupstream.OpenAIHandler(opts)
		model = held
		if *holdInput != "" || *holdPrefix != "" {
			model = route(held, free, func(input string) bool {
				return (*holdInput != "" && input == *holdInput) ||
					(*holdPrefix != "" && strings.HasPrefix(input, *holdPrefix))
			})
		}
	}

	mux := http.NewServeMux()
	mux.HandleFunc("POST /control/release", func(w http.ResponseWriter, r *http.Request) {
		release()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.Handle("/", model)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go func() {
		// The test's end: it closed the pipe, or died.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	fmt.Printf("fakemodel listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}

// route answers with held the requests whose input isHeld says, and with
// free the others.
func route(held, free http.Handler, isHeld func(input string) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		if isHeld(lastUserInput(raw)) {
			held.ServeHTTP(w, r)
			return
		}
		free.ServeHTTP(w, r)
	})
}

// lastUserInput is the text of the last user message of a Chat Completions
// request ("" if there is none).
func lastUserInput(raw []byte) string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(raw, &req)
	for i := len(req.Messages) - 1; i >= 0; i-- {
		m := req.Messages[i]
		if m.Role != "user" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			return text
		}
		var parts []struct{ Type, Text string }
		_ = json.Unmarshal(m.Content, &parts)
		for _, p := range parts {
			text += p.Text
		}
		return text
	}
	return ""
}
