//go:build !unix

package fdbudget

// Limit reports no limit where there is no RLIMIT_NOFILE: the budget
// bounds nothing there.
func Limit() (soft, hard int, err error) { return 0, 0, nil }
