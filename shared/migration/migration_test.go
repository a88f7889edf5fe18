package migration

import (
	"reflect"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"m/0002_more.sql": {Data: []byte("-- a comment\nALTER TABLE t ADD COLUMN b INT;\n")},
		"m/0001_init.sql": {Data: []byte("CREATE TABLE t (\n    a INT -- the key\n);\n\nCREATE INDEX i ON t (a);\n")},
		"m/README":        {Data: []byte("not a migration")},
	}
	got, err := Load(fsys, "m")
	if err != nil {
		t.Fatal(err)
	}
	want := []File{
		{1, "0001_init.sql", []string{"CREATE TABLE t (\n    a INT -- the key\n)", "CREATE INDEX i ON t (a)"}},
		{2, "0002_more.sql", []string{"ALTER TABLE t ADD COLUMN b INT"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Load = %#v\nwant %#v", got, want)
	}
	if _, err := Load(fstest.MapFS{"m/init.sql": {Data: []byte("x")}}, "m"); err == nil {
		t.Fatal("a file without a version was accepted")
	}
}
