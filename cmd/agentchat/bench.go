package main

import (
	"context"
	"errors"
	"io"
)

func bench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not yet")
}
