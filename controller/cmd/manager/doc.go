// Command manager runs the platform-operators controllers. It parses flags and wires the
// controllers into one controller-runtime manager; the logic lives in the controller packages.
//
// It owns flags, their validation, the manager's caches and the wiring of the enabled
// controllers, and the manager's own +kubebuilder:rbac markers (leader election, Events). It must
// not hold controller logic: each behaviour lives in its controller package, so that envtest
// tests reach it without this command.
package main
