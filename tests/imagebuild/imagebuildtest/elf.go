// Package imagebuildtest writes stand-in binaries for the imagebuild tests: just enough of an ELF
// header for imagebuild.Inspect to read a platform, so image tests need no cross-compiler.
package imagebuildtest

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// Machines maps the architectures the helpers know to their ELF machine.
var Machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// ELF returns a little-endian 64-bit Linux executable header for machine, followed by a program
// header naming interp as the dynamic loader when interp is set, then payload.
func ELF(machine elf.Machine, interp string, payload []byte) []byte {
	const ehsize, phentsize = 64, 56
	h := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Ehsize:    ehsize,
		Phentsize: phentsize,
	}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	h.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	h.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	var progs []elf.Prog64
	var tail []byte
	if interp != "" {
		h.Phoff, h.Phnum = ehsize, 1
		tail = append([]byte(interp), 0)
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Off: ehsize + phentsize, Filesz: uint64(len(tail)), Memsz: uint64(len(tail)), Align: 1})
	}
	var buf bytes.Buffer
	// Writes to a bytes.Buffer do not fail.
	_ = binary.Write(&buf, binary.LittleEndian, h)
	for _, p := range progs {
		_ = binary.Write(&buf, binary.LittleEndian, p)
	}
	buf.Write(tail)
	buf.Write(payload)
	return buf.Bytes()
}

// Binary writes a static stand-in binary for linux/arch into a temporary directory and returns
// its path and content. The content names the test, so binaries of different tests differ.
func Binary(t testing.TB, arch string) (string, []byte) {
	t.Helper()
	m, ok := Machines[arch]
	if !ok {
		t.Fatalf("no ELF machine known for %q", arch)
	}
	data := ELF(m, "", []byte("not really a program: "+t.Name()))
	p := filepath.Join(t.TempDir(), "bin-linux-"+arch)
	if err := os.WriteFile(p, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return p, data
}
