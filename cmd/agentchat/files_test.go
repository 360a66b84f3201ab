package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentchat/agentchat/internal/llm/fakeupstream"
)

// Under a low open-files limit (the hard limit, which Go cannot raise), more
// concurrent chats than the limit allows each get an answer: a full stream,
// or at once a 503 overloaded with Retry-After. None waits without one (on
// main, clients sat in the accept queue while net/http retried accept), no
// run fails to dial the model, and the store never lacks a descriptor
// (on main, "unable to open database file (14)").
//
// The model's answers wait until every client has been answered or has its
// stream open, so the chats are truly concurrent; then they flow.
func TestChatsUnderALowOpenFilesLimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd")
	}
	t.Parallel()
	const (
		limit   = 256
		clients = 300
		token   = "files-token-0123456789"
	)
	gate := make(chan struct{})
	up := fakeupstream.OpenAIHandler(fakeupstream.Options{Tokens: 12, Delay: time.Millisecond, DiscardRequests: true,
		OnRequest: func(fakeupstream.Request) { <-gate }})
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	defer up.Close()
	var gateOnce sync.Once
	open := func() { gateOnce.Do(func() { close(gate) }) }
	defer open()

	// The child: this test binary as `agentchat serve`, its limit lowered
	// (soft and hard) by the shell before it starts.
	cmd := exec.Command("/bin/sh", "-c", fmt.Sprintf(`ulimit -n %d && exec "$0" -test.run='^$'`, limit), os.Args[0])
	cmd.Env = append(os.Environ(), "AGENTCHAT_TEST_SERVE=1", "AGENTCHAT_ADDR=127.0.0.1:0", "AGENTCHAT_DATA_DIR="+t.TempDir(),
		"AGENTCHAT_TOKENS="+token+":acme:alice", "AGENTCHAT_LLM=openai", "OPENAI_BASE_URL="+upstream.URL+"/v1", "OPENAI_API_KEY=sk-fake",
		"AGENTCHAT_MODEL=fake", "AGENTCHAT_LLM_RETRIES=-1", "AGENTCHAT_PING_INTERVAL=1s")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	var base string
	for base == "" {
		if !sc.Scan() {
			t.Fatalf("the server ended before listening:\n%s", logs.String())
		}
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			base = m[1]
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	if !strings.Contains(logs.String(), fmt.Sprintf(`msg="open files" limit=%d hard_limit=%d`, limit, limit)) ||
		!strings.Contains(logs.String(), "open files: the limit is low for a server") {
		t.Fatalf("the start does not log the limit and warn:\n%s", logs.String())
	}

	type outcome struct {
		kind   string // "stream" (opened), then "done"; or "overloaded"; or what went wrong
		detail string
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, MaxIdleConnsPerHost: -1}}
	started := make(chan outcome, clients) // the first answer of each client
	ended := make(chan outcome, clients)   // how each ended
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			// A hang guard, not a timing assertion: a client with no answer
			// at all is the failure this test is about.
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			first := func(o outcome) { started <- o; ended <- o }
			req, _ := http.NewRequestWithContext(ctx, "POST", base+"/v1/agent/chat", strings.NewReader(fmt.Sprintf(`{"input":"chat %d"}`, i)))
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := client.Do(req)
			if err != nil {
				first(outcome{"no answer", err.Error()})
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				raw, _ := io.ReadAll(resp.Body)
				var body struct{ Error struct{ Code string } }
				_ = json.Unmarshal(raw, &body)
				if resp.StatusCode == http.StatusServiceUnavailable && body.Error.Code == "overloaded" && resp.Header.Get("Retry-After") != "" {
					first(outcome{"overloaded", ""})
				} else {
					first(outcome{"refused otherwise", fmt.Sprintf("%d %s", resp.StatusCode, raw)})
				}
				return
			}
			rd := bufio.NewReader(resp.Body)
			told := false
			for {
				line, err := rd.ReadString('\n')
				if err != nil {
					if !told {
						started <- outcome{"stream", ""}
					}
					ended <- outcome{"stream without its end", err.Error()}
					return
				}
				if !told && strings.HasPrefix(line, "event: agent.start") {
					told = true
					started <- outcome{"stream", ""}
				}
				if strings.HasPrefix(line, "data: ") && strings.Contains(line, `"event":"agent.end"`) {
					if !strings.Contains(line, `"status":"succeeded"`) {
						ended <- outcome{"run failed", line}
						return
					}
					ended <- outcome{"done", ""}
					return
				}
			}
		})
	}
	// Every client has its first answer while the model still holds back.
	counts := map[string]int{}
	for range clients {
		o := <-started
		counts[o.kind]++
		if o.kind != "stream" && o.kind != "overloaded" {
			t.Errorf("a client: %s: %s", o.kind, o.detail)
		}
	}
	open()
	wg.Wait()
	close(ended)
	endings := map[string]int{}
	for o := range ended {
		endings[o.kind]++
		if o.kind != "done" && o.kind != "overloaded" {
			t.Errorf("a client: %s: %s", o.kind, o.detail)
		}
	}
	t.Logf("first answers %v, endings %v", counts, endings)
	if counts["stream"] == 0 || counts["overloaded"] == 0 || endings["done"] != counts["stream"] {
		t.Errorf("first answers %v, endings %v: want some streams, all completed, and some refused", counts, endings)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	_ = cmd.Wait()
	for _, bad := range []string{"level=ERROR", "too many open files", "unable to open database file", "Accept error"} {
		if strings.Contains(logs.String(), bad) {
			t.Errorf("the server logged %q:\n%s", bad, logs.String())
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
