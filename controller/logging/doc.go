// Package logging builds the manager's logger from the --log-format and --log-level flags.
//
// It owns the flag values and the logger they build. It must not log for other packages: they take
// the logger from their context (ctrl.LoggerFrom).
package logging
