// Package gitops runs, for tests, what GitOps tools read from our objects: Argo CD's health check
// (docs/gitops/argocd-health.lua, run with gopher-lua as Argo CD runs it) and kstatus (the status
// library of Flux, kpt and cli-utils). Tests in the controllers' packages hand it statuses their
// own status functions computed.
package gitops

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// HealthScript is the path of the Argo CD health check, which docs/gitops.md embeds.
func HealthScript() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "docs", "gitops", "argocd-health.lua")
}

// Unstructured converts a typed object (its TypeMeta set) to its JSON form, as the API server
// serves it.
func Unstructured(obj k8sruntime.Object) (*unstructured.Unstructured, error) {
	m, err := k8sruntime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	// Through JSON, so numbers are float64 and int64 as in a decoded API response.
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	return u, u.UnmarshalJSON(b)
}

// ArgoHealth runs the health check on obj as Argo CD does (the object as the global obj, the
// script's return value a table with status and message).
func ArgoHealth(obj *unstructured.Unstructured) (healthStatus, message string, err error) {
	script, err := os.ReadFile(HealthScript())
	if err != nil {
		return "", "", err
	}
	ls := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer ls.Close()
	// Argo CD opens the base, table, string, math and coroutine libraries (and os.time/date).
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}, {lua.CoroutineLibName, lua.OpenCoroutine}} {
		ls.Push(ls.NewFunction(lib.open))
		ls.Push(lua.LString(lib.name))
		ls.Call(1, 0)
	}
	ls.SetGlobal("obj", toLua(ls, obj.Object))
	if err := ls.DoString(string(script)); err != nil {
		return "", "", err
	}
	ret, ok := ls.Get(-1).(*lua.LTable)
	if !ok {
		return "", "", fmt.Errorf("the health check returned %s, want a table", ls.Get(-1).Type())
	}
	return lua.LVAsString(ret.RawGetString("status")), lua.LVAsString(ret.RawGetString("message")), nil
}

// toLua converts a decoded JSON value to Lua values as Argo CD's decodeValue does.
func toLua(ls *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		t := ls.NewTable()
		for k, e := range v {
			t.RawSetString(k, toLua(ls, e))
		}
		return t
	case []any:
		t := ls.NewTable()
		for _, e := range v {
			t.Append(toLua(ls, e))
		}
		return t
	case string:
		return lua.LString(v)
	case bool:
		return lua.LBool(v)
	case int64:
		return lua.LNumber(v)
	case float64:
		return lua.LNumber(v)
	case nil:
		return lua.LNil
	}
	panic(fmt.Sprintf("unexpected JSON value %T", v))
}

// KStatus computes obj's kstatus (Current, InProgress, Failed, Terminating, ...).
func KStatus(obj *unstructured.Unstructured) (string, error) {
	res, err := status.Compute(obj)
	if err != nil {
		return "", err
	}
	return res.Status.String(), nil
}

// Want is what the GitOps tools should read from an object: Argo CD's health and a part of its
// message, and kstatus's status ("" to leave kstatus out).
type Want struct {
	Argo, Message, KStatus string
}

// Check runs the Argo CD health check and kstatus on obj and reports, through errorf (a test's
// Errorf), each that reads other than want.
func Check(obj k8sruntime.Object, want Want, errorf func(format string, args ...any)) {
	u, err := Unstructured(obj)
	if err != nil {
		errorf("converting %T: %v", obj, err)
		return
	}
	health, msg, err := ArgoHealth(u)
	if err != nil {
		errorf("Argo CD health check: %v", err)
		return
	}
	if health != want.Argo || !strings.Contains(msg, want.Message) {
		errorf("Argo CD health %s %q, want %s with %q; status %v", health, msg, want.Argo, want.Message, u.Object["status"])
	}
	if want.KStatus == "" {
		return
	}
	if ks, err := KStatus(u); err != nil || ks != want.KStatus {
		errorf("kstatus %s (%v), want %s; status %v", ks, err, want.KStatus, u.Object["status"])
	}
}
