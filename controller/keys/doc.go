// Package keys is the one place that names the labels and annotations the manager reads or
// writes on Kubernetes objects. Every key of ours has the prefix ops.platform-operators.io/; on a
// shared object (a Secret copy, a ServiceAccount, a Job) we read and write only these keys and
// keep every other one.
//
// It imports nothing, so that every package, pure or not, can use it.
//
// It owns the key strings; their values never change (keys_test.go), since objects in clusters
// carry them. It must not hold logic beyond naming.
package keys
