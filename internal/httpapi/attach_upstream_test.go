package httpapi_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/file/filetest"
	"github.com/agentchat/agentchat/internal/llm"
	"github.com/agentchat/agentchat/internal/llm/anthropic"
	"github.com/agentchat/agentchat/internal/llm/llmtest"
	"github.com/agentchat/agentchat/internal/llm/openai"
)

// The files issue's first "done when": an image and a PDF sent from each
// of the three chat surfaces reach the provider in its own format, as the
// request the fake upstream receives shows, on both store backends (and
// so both file storages), and nothing in that request points back at
// agentchat.
func TestAttachmentsReachTheProvider(t *testing.T) {
	t.Parallel()
	pdf := filetest.PDF("Returns are accepted within thirty days.")
	b64 := base64.StdEncoding.EncodeToString
	for _, provider := range []string{"openai", "anthropic"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			backends(t, func(t *testing.T, o options) {
				var up *llmtest.Server
				var m llm.Model
				var err error
				reply := llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("Seen.")}}
				if provider == "openai" {
					up = llmtest.NewOpenAIServer(t, reply)
					m, err = openai.New(openai.Config{BaseURL: up.URL + "/v1", APIKey: "k", Model: "gpt-test", MaxRetries: -1})
				} else {
					up = llmtest.NewAnthropicServer(t, reply)
					m, err = anthropic.New(anthropic.Config{BaseURL: up.URL, APIKey: "k", Model: "claude-test", MaxRetries: -1})
				}
				if err != nil {
					t.Fatal(err)
				}
				o.files, o.model = true, m
				e := setup(t, o)

				img := e.uploadFile(alice, "cat.png", pngBytes, 201)["id"].(string)
				doc := e.uploadFile(alice, "handbook.pdf", pdf, 201)["id"].(string)
				e.chat(alice, map[string]any{"input": "native", "attachments": []string{img, doc}})

				dataURL := func(mt string, b []byte) string { return "data:" + mt + ";base64," + b64(b) }
				resp := e.send(req{method: "POST", path: "/v1/agent/chat?format=vercel-ai", token: alice, body: map[string]any{
					"id": "chat-upstream", "messages": []any{map[string]any{"id": "m1", "role": "user", "parts": []any{
						map[string]any{"type": "text", "text": "vercel"},
						map[string]any{"type": "file", "mediaType": "image/png", "filename": "cat.png", "url": dataURL("image/png", pngBytes)},
						map[string]any{"type": "file", "mediaType": "application/pdf", "filename": "handbook.pdf", "url": dataURL("application/pdf", pdf)}}}}}})
				_, _ = io.ReadAll(resp.Body)
				resp.Body.Close()

				in := input("thread-upstream", "run-upstream", map[string]any{"id": "u1", "role": "user", "content": []any{
					map[string]any{"type": "text", "text": "agui"},
					map[string]any{"type": "image", "source": map[string]any{"type": "data", "value": b64(pngBytes), "mimeType": "image/png"}},
					map[string]any{"type": "document", "source": map[string]any{"type": "data", "value": b64(pdf), "mimeType": "application/pdf"}}}})
				e.aguiRun(alice, in)

				// AG-UI's document part carries no file name: the stored file is named for its type.
				wantName := map[string]string{"native": "handbook.pdf", "vercel": "handbook.pdf", "agui": "file.pdf"}
				reqs := up.Requests()
				if len(reqs) != 3 {
					t.Fatalf("the upstream got %d requests, want one per surface", len(reqs))
				}
				for i, surface := range []string{"native", "vercel", "agui"} {
					if strings.Contains(string(reqs[i].Raw), "/v1/files/") {
						t.Errorf("%s: the request points back at agentchat", surface)
					}
					var body struct {
						Messages []struct {
							Role    string          `json:"role"`
							Content json.RawMessage `json:"content"` // a string or parts
						} `json:"messages"`
					}
					if err := json.Unmarshal(reqs[i].Raw, &body); err != nil || len(body.Messages) == 0 {
						t.Fatalf("%s: request %s: %v", surface, reqs[i].Raw, err)
					}
					last := body.Messages[len(body.Messages)-1]
					var content []json.RawMessage
					_ = json.Unmarshal(last.Content, &content)
					parts := map[string]map[string]any{}
					for _, raw := range content {
						var p map[string]any
						_ = json.Unmarshal(raw, &p)
						parts[p["type"].(string)] = p
					}
					if provider == "openai" {
						imageURL, _ := parts["image_url"]["image_url"].(map[string]any)
						fileData, _ := parts["file"]["file"].(map[string]any)
						if last.Role != "user" || imageURL["url"] != dataURL("image/png", pngBytes) ||
							fileData["file_data"] != dataURL("application/pdf", pdf) || fileData["filename"] != wantName[surface] {
							t.Errorf("%s: the last message is not an image_url and a file part: %s", surface, reqs[i].Raw)
						}
						continue
					}
					image, _ := parts["image"]["source"].(map[string]any)
					document, _ := parts["document"]["source"].(map[string]any)
					if last.Role != "user" || image["type"] != "base64" || image["media_type"] != "image/png" || image["data"] != b64(pngBytes) ||
						document["type"] != "base64" || document["media_type"] != "application/pdf" || document["data"] != b64(pdf) {
						t.Errorf("%s: the last message is not an image and a document block: %s", surface, reqs[i].Raw)
					}
				}
			})
		})
	}
}

// A file beyond images, PDFs and text reaches a model whose models-file
// entry accepts its type (audio as OpenAI's input_audio), and is refused
// before its run starts, naming the type and the model, for one that does
// not (the built-in agent's model here).
func TestAttachmentTypesAModelAccepts(t *testing.T) {
	t.Parallel()
	up := llmtest.NewOpenAIServer(t, llmtest.Options{Replies: []llmtest.Reply{llmtest.TextReply("A greeting.")}})
	path := filepath.Join(t.TempDir(), "models.json")
	models := `{"models": {"offline": {"provider": "scripted"},
		"listener": {"provider": "openai", "model": "gpt-audio", "baseURL": "` + up.URL + `/v1", "apiKeyEnv": "TEST_UPSTREAM_KEY", "accepts": ["audio/*"]}}}`
	if err := os.WriteFile(path, []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	e := setup(t, options{agents: true, modelsFile: path, files: true, fileTypes: append(slices.Clone(file.DefaultTypes), "audio/wave"),
		getenv: func(k string) string { return map[string]string{"TEST_UPSTREAM_KEY": upstreamKey}[k] }})
	wav := append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), bytes.Repeat([]byte{1}, 64)...)
	id := e.uploadFile(alice, "hello.wav", wav, 201)["id"].(string)

	refused := e.call(req{method: "POST", path: "/v1/agent/chat", token: alice,
		body: map[string]any{"input": "what do you hear?", "attachments": []string{id}}}, 422)["error"].(map[string]any)
	if refused["code"] != "unsupported_file_type" || refused["mediaType"] != "audio/wave" || refused["model"] == "" ||
		!strings.Contains(fmt.Sprint(refused["message"]), "audio/wave") {
		t.Fatalf("refusal %v: want the type and the model named", refused)
	}
	if n := len(up.Requests()); n != 0 {
		t.Fatalf("a refused start reached the model (%d requests)", n)
	}

	listener := e.call(req{method: "POST", path: "/v1/agents", token: root, body: map[string]any{"name": "Listener", "model": "listener"}}, 201)["id"].(string)
	e.chat(alice, map[string]any{"input": "what do you hear?", "attachments": []string{id}, "agentId": listener})
	reqs := up.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the upstream got %d requests, want 1", len(reqs))
	}
	var body struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[0].Raw, &body); err != nil || len(body.Messages) == 0 {
		t.Fatalf("request %s: %v", reqs[0].Raw, err)
	}
	var parts []audioPart
	_ = json.Unmarshal(body.Messages[len(body.Messages)-1].Content, &parts)
	if !slices.Contains(parts, audioPart{Type: "input_audio", InputAudio: audioData{Data: base64.StdEncoding.EncodeToString(wav), Format: "wav"}}) {
		t.Fatalf("the model did not receive the audio as input_audio: %s", reqs[0].Raw)
	}
}

// audioPart is an OpenAI content part as far as input_audio goes.
type audioPart struct {
	Type       string    `json:"type"`
	InputAudio audioData `json:"input_audio"`
}

type audioData struct {
	Data   string `json:"data"`
	Format string `json:"format"`
}
