package httpapi

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"

	"github.com/agentchat/agentchat/internal/dialect"
	"github.com/agentchat/agentchat/internal/errcode"
	"github.com/agentchat/agentchat/internal/file"
	"github.com/agentchat/agentchat/internal/run"
	"github.com/agentchat/agentchat/internal/store"
)

// fileRoutes adds the file API: upload, read, download, delete, list.
func (s *Server) fileRoutes(api, stream func(string, handlerFunc)) {
	api("POST /v1/files", s.uploadFile)
	api("GET /v1/files", s.listFiles)
	api("GET /v1/files/{fileId}", s.getFile)
	// The content route takes ?access_token= too, for an <img> tag.
	stream("GET /v1/files/{fileId}/content", s.fileContent)
	api("DELETE /v1/files/{fileId}", s.deleteFile)
}

// uploadPattern is the route whose body may be as large as a file.
const uploadPattern = "POST /v1/files"

// multipartSlack is what a multipart body may carry beyond the file: its
// boundaries and headers.
const multipartSlack = 64 << 10

// fileView is the API shape of a file.
type fileView struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	MediaType string `json:"mediaType"`
	Size      int64  `json:"size"`
	SHA256    string `json:"sha256"`
	CreatedAt string `json:"createdAt"`
	// URL is the file's content route, relative to the server.
	URL string `json:"url"`
}

func viewFile(f store.File) fileView {
	return fileView{ID: f.ID, Name: f.Name, MediaType: f.MediaType, Size: f.Size, SHA256: f.SHA256,
		CreatedAt: dialect.Millis(f.CreatedAt), URL: ContentPath(f.ID)}
}

// ContentPath is the route serving a file's bytes.
func ContentPath(id string) string { return "/v1/files/" + id + "/content" }

func (s *Server) fileService() (*file.Service, error) {
	if s.files == nil {
		return nil, apiErr(http.StatusNotFound, errcode.FilesDisabled, "this server stores no files")
	}
	return s.files, nil
}

// fileErr maps the file service's refusals to their answers.
func fileErr(err error) error { return toAPIError(err, errcode.FileNotFound, "file") }

// fileRefusal is the answer to a refused file (an upload, or an
// attachment of a message), or nil when err is not one.
func fileRefusal(err error) *Error {
	var large *file.TooLargeError
	var typ *file.TypeError
	var quota *file.QuotaError
	var bad *file.URLError
	var model *run.UnsupportedFileError
	var missing *run.AttachmentNotFoundError
	switch {
	case errors.As(err, &large):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: errcode.FileTooLarge, Message: large.Error(), Extra: map[string]any{"limit": large.Limit}}
	case errors.As(err, &typ):
		return &Error{Status: http.StatusUnsupportedMediaType, Code: errcode.UnsupportedFileType,
			Message: fmt.Sprintf("files of type %s cannot be uploaded here; allowed types: %s", typ.MediaType, strings.Join(typ.Allowed, ", ")),
			Extra:   map[string]any{"mediaType": typ.MediaType}}
	case errors.As(err, &quota):
		return &Error{Status: http.StatusInsufficientStorage, Code: errcode.FileQuotaExceeded, Message: quota.Error() + "; delete files or ask an operator to raise the quota"}
	case errors.As(err, &bad):
		return apiErr(http.StatusUnprocessableEntity, errcode.FileURLRefused, "%s", bad.Error())
	case errors.As(err, &model):
		return &Error{Status: http.StatusUnprocessableEntity, Code: errcode.UnsupportedFileType, Message: model.Error(),
			Extra: map[string]any{"mediaType": model.MediaType, "model": model.Model}}
	case errors.As(err, &missing):
		return apiErr(http.StatusNotFound, errcode.FileNotFound, "attached file %s not found", missing.FileID)
	case errors.Is(err, run.ErrFilesDisabled):
		return apiErr(http.StatusUnprocessableEntity, errcode.FilesDisabled, "this server stores no files, so a message cannot attach one")
	}
	return nil
}

// uploadFile takes a multipart form's "file" field, or a raw body named by
// the filename query parameter. The Content-Type a client sends is never
// trusted: the service sniffs the bytes.
func (s *Server) uploadFile(w http.ResponseWriter, r *http.Request) error {
	fs, err := s.fileService()
	if err != nil {
		return err
	}
	ctx, sc := r.Context(), scopeOf(r.Context())
	mt, params, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	up := file.Upload{Size: -1}
	if mt == "multipart/form-data" {
		if r.ContentLength > fs.MaxBytes()+multipartSlack {
			return fileErr(&file.TooLargeError{Limit: fs.MaxBytes()})
		}
		if params["boundary"] == "" {
			return apiErr(http.StatusBadRequest, errcode.InvalidBody, "a multipart body needs a boundary")
		}
		mr, err := r.MultipartReader()
		if err != nil {
			return apiErr(http.StatusBadRequest, errcode.InvalidBody, "the multipart body could not be read")
		}
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				return apiErr(http.StatusUnprocessableEntity, errcode.MissingField, "the multipart form has no \"file\" field")
			}
			if err != nil {
				return bodyErr(err)
			}
			if part.FormName() == "file" {
				up.Name, up.Body = part.FileName(), part
				break
			}
		}
	} else {
		if r.ContentLength > fs.MaxBytes() {
			return fileErr(&file.TooLargeError{Limit: fs.MaxBytes()})
		}
		up.Name, up.Body, up.Size = r.URL.Query().Get("filename"), r.Body, r.ContentLength
		if up.Name == "" {
			return apiErr(http.StatusUnprocessableEntity, errcode.MissingField, "a raw upload needs the filename query parameter (or send multipart/form-data with a \"file\" field)")
		}
	}
	f, err := fs.Create(ctx, sc, up)
	if err != nil {
		if be := bodyErr(err); be != err {
			return be
		}
		return fileErr(err)
	}
	liftBodyDeadline(r)
	writeJSON(w, http.StatusCreated, viewFile(f))
	return nil
}

// bodyErr answers a body that could not be read: too large, too slow or
// broken; other errors are returned as they are.
func bodyErr(err error) error {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: errcode.FileTooLarge, Message: "the request body is larger than the file size limit allows"}
	case errors.Is(err, errDeadline):
		return apiErr(http.StatusRequestTimeout, errcode.BodyTimeout, "the request body did not arrive in time")
	}
	return err
}

func (s *Server) listFiles(w http.ResponseWriter, r *http.Request) error {
	fs, err := s.fileService()
	if err != nil {
		return err
	}
	return writePage(w, r, "files", fs.List, viewFile)
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request) error {
	fs, err := s.fileService()
	if err != nil {
		return err
	}
	f, err := fs.Get(r.Context(), scopeOf(r.Context()), r.PathValue("fileId"))
	if err != nil {
		return fileErr(err)
	}
	writeJSON(w, http.StatusOK, viewFile(f))
	return nil
}

func (s *Server) deleteFile(w http.ResponseWriter, r *http.Request) error {
	fs, err := s.fileService()
	if err != nil {
		return err
	}
	if err := fs.Delete(r.Context(), scopeOf(r.Context()), r.PathValue("fileId")); err != nil {
		return fileErr(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fileContent serves a file's bytes with Range and ETag (the content
// address). Nothing served can run in the console's origin: the type is
// the sniffed one and nosniff holds browsers to it, the CSP sandboxes the
// response (no script, no same origin) and allows nothing to load, and
// anything but an image is an attachment, downloaded rather than shown.
func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) error {
	fs, err := s.fileService()
	if err != nil {
		return err
	}
	f, o, err := fs.Open(r.Context(), scopeOf(r.Context()), r.PathValue("fileId"))
	if err != nil {
		return fileErr(err)
	}
	defer o.Close()
	h := w.Header()
	ct := f.MediaType
	if file.KindOf(ct) == file.KindText {
		ct += "; charset=utf-8"
	}
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-cache")
	h.Set("ETag", `"`+f.SHA256+`"`)
	disposition := "attachment"
	if file.KindOf(f.MediaType) == file.KindImage {
		disposition = "inline"
	}
	h.Set("Content-Disposition", mime.FormatMediaType(disposition, map[string]string{"filename": f.Name}))
	http.ServeContent(w, r, "", f.CreatedAt, o)
	return nil
}

var errDeadline = os.ErrDeadlineExceeded

// bodyLimit is the largest body a route takes: a file's size for uploads,
// the server's limit elsewhere.
func (s *Server) bodyLimit(pattern string) int64 {
	if s.files == nil {
		return s.maxBody
	}
	switch pattern {
	case uploadPattern:
		return s.files.MaxBytes() + multipartSlack
	case "POST /v1/agent/chat", "POST /api/v1/agent/runs":
		// A message may carry a file inline (an AI SDK or AG-UI data: URL,
		// base64: 4 bytes for 3), stored as a file on arrival.
		return max(s.maxBody, s.files.MaxBytes()/3*4+s.maxBody)
	}
	return s.maxBody
}
