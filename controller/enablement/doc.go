// Package enablement decides which controllers a manager runs from the --controllers flag,
// with the syntax kube-controller-manager users know: "*" means every controller that is on by
// default, "name" turns one on, "-name" turns one off. The last word about a name wins.
//
// It is not k8s.io/controller-manager/app.IsControllerEnabled, the library kube-controller-manager
// uses: that package imports k8s.io/apiserver's server, which the manager left behind to halve its
// binary and start in 27 MB instead of 43 MB (see package metricsauth). That function also lets
// the first word about a name win and says nothing of an unknown name; here an unknown name is an
// error, so a typo never silently disables a controller.
//
// It owns the flag's syntax and the answer. It must not know the controllers themselves: the
// manager passes the list in.
package enablement
