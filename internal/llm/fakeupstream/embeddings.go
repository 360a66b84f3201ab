package fakeupstream

import (
	"encoding/json"
	"hash/fnv"
	"math"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode"
)

// Embeddings is a fake OpenAI-compatible embeddings endpoint: POST
// /embeddings (under any prefix, e.g. /v1) with the real request and
// response shapes. Each vector is a hashed bag of the input's words and
// character bigrams, so texts sharing words are similar; the same text
// always gives the same vector. Fail makes it answer 503. Safe for
// concurrent requests.
type Embeddings struct {
	Dims  int
	Fail  atomic.Bool
	Calls atomic.Int64
	// Auth, when set, is the bearer token every request must carry.
	Auth string
}

func (f *Embeddings) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.Calls.Add(1)
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/embeddings") {
		http.NotFound(w, r)
		return
	}
	if f.Auth != "" && r.Header.Get("Authorization") != "Bearer "+f.Auth {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"message":"bad key","type":"invalid_request_error"}}`))
		return
	}
	if f.Fail.Load() {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
		return
	}
	var req struct {
		Input          any    `json:"input"`
		Model          string `json:"model"`
		EncodingFormat string `json:"encoding_format"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":{"message":"bad request","type":"invalid_request_error"}}`))
		return
	}
	var inputs []string
	switch in := req.Input.(type) {
	case string:
		inputs = []string{in}
	case []any:
		for _, x := range in {
			s, _ := x.(string)
			inputs = append(inputs, s)
		}
	}
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	}
	resp := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
		Usage  struct {
			PromptTokens int `json:"prompt_tokens"`
			TotalTokens  int `json:"total_tokens"`
		} `json:"usage"`
	}{Object: "list", Model: req.Model}
	for i, s := range inputs {
		resp.Data = append(resp.Data, item{Object: "embedding", Index: i, Embedding: f.vector(s)})
		resp.Usage.PromptTokens += len(strings.Fields(s))
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

func (f *Embeddings) vector(s string) []float64 {
	dims := f.Dims
	if dims == 0 {
		dims = 64
	}
	v := make([]float64, dims)
	add := func(tok string) {
		h := fnv.New32a()
		h.Write([]byte(tok))
		v[h.Sum32()%uint32(dims)]++
	}
	rs := []rune(strings.ToLower(s))
	word := []rune{}
	for i, r := range rs {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			word = append(word, r)
			if i+1 < len(rs) && r > 0x2e80 {
				add(string(rs[i : i+2]))
			}
			continue
		}
		if len(word) > 0 {
			add(string(word))
			word = word[:0]
		}
	}
	if len(word) > 0 {
		add(string(word))
	}
	var n float64
	for _, x := range v {
		n += x * x
	}
	if n > 0 {
		for i := range v {
			v[i] /= math.Sqrt(n)
		}
	}
	return v
}
