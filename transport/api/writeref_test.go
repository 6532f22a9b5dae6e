package api

import "testing"

func TestWriteRef_RoundTripsAndRejectsMalformed(t *testing.T) {
	ref := WriteRef("mgr-use1-2", 981)
	if ref != "mgr-use1-2/981" {
		t.Fatalf("WriteRef = %q", ref)
	}
	node, lsn, err := ParseWriteRef(ref)
	if err != nil || node != "mgr-use1-2" || lsn != 981 {
		t.Fatalf("ParseWriteRef(%q) = %q, %d, %v", ref, node, lsn, err)
	}
	for _, bad := range []string{"", "m1", "/5", "m1/", "m1/0", "m1/-3", "m1/x", "m1/18446744073709551616"} {
		if _, _, err := ParseWriteRef(bad); err == nil {
			t.Errorf("ParseWriteRef(%q) accepted", bad)
		}
	}
}

// FuzzParseWriteRef: whatever parses renders back to itself, unless the
// LSN had leading zeros or a sign.
func FuzzParseWriteRef(f *testing.F) {
	f.Add("m1/42")
	f.Add("a/b/7")
	f.Fuzz(func(t *testing.T, s string) {
		node, lsn, err := ParseWriteRef(s)
		if err != nil {
			return
		}
		if lsn == 0 || node == "" {
			t.Fatalf("%q parsed to %q, %d", s, node, lsn)
		}
		if again, l2, err := ParseWriteRef(WriteRef(node, lsn)); err != nil || again != node || l2 != lsn {
			t.Fatalf("%q: round trip %q, %d, %v", s, again, l2, err)
		}
	})
}
