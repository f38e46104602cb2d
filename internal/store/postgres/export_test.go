package postgres

// OpenConfig opens the store with a connection config of the test's own
// (a dialer that counts what is sent).
var OpenConfig = openConfig
