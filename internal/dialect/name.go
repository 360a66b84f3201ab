package dialect

import (
	"path"
	"reflect"
)

// Name is the wire format an encoder speaks, named by its package (native,
// agui, vercel, conversation, chain): a bounded label for metrics that
// needs no switch on formats.
func Name(enc Encoder) string {
	t := reflect.TypeOf(enc)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.PkgPath() == "" {
		return "unknown"
	}
	return path.Base(t.PkgPath())
}
