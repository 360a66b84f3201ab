package chat

import "regexp"

// DefaultCollection is the knowledge collection of a document that names
// none, and the one every agent searches unless it names its own.
const DefaultCollection = "default"

var collectionName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidCollection reports whether name can name a knowledge collection:
// 1 to 64 letters, digits and . _ -, starting with a letter or a digit.
func ValidCollection(name string) bool { return collectionName.MatchString(name) }
