package httpapi

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the API's OpenAPI 3.1 document: every route, body, response,
// error and stream frame. The HTTP tests validate every request they send
// and every response they get against it, so it cannot drift from the code.
//
//go:embed openapi.json
var OpenAPI []byte

// openapi serves the document, unauthenticated.
func (s *Server) openapi(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, err := w.Write(OpenAPI)
	return err
}
