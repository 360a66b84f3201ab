package auth

// CacheTTL is cacheTTL, for the tests.
var CacheTTL = cacheTTL
