package run

import (
	"fmt"
	"strconv"
)

// InputError is a request the service refuses before anything runs: well
// formed, but it cannot start or continue a run. Reason says why, for the
// person who sent it ("input is empty"). It wraps ErrInvalidInput, so
// errors.Is(err, ErrInvalidInput) holds.
type InputError struct{ Reason string }

func (e *InputError) Error() string { return ErrInvalidInput.Error() + ": " + e.Reason }
func (e *InputError) Unwrap() error { return ErrInvalidInput }

// invalidInput is an *InputError whose reason is formatted.
func invalidInput(format string, a ...any) error {
	return &InputError{Reason: fmt.Sprintf(format, a...)}
}

// TooManyRunsError refuses a start because the tenant already has Limit
// runs executing (Config.MaxRunsPerTenant), counted across replicas. It
// wraps ErrTooManyRuns, so errors.Is(err, ErrTooManyRuns) holds.
type TooManyRunsError struct{ Limit int }

func (e *TooManyRunsError) Error() string {
	return ErrTooManyRuns.Error() + " (limit " + strconv.Itoa(e.Limit) + ")"
}
func (e *TooManyRunsError) Unwrap() error { return ErrTooManyRuns }
