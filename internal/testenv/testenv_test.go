package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const childEnv = "STRATA_TESTENV_CHILD"

// TestToolChild is run by TestTool in a child process, with an empty PATH.
func TestToolChild(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("child process of TestTool")
	}
	Tool(t, "strata-no-such-tool", "apt-get install -y strata-no-such-tool")
	t.Log("Tool returned")
}

// TestTool: a missing tool skips the test, naming it and how to install it; with CI set the same test fails.
func TestTool(t *testing.T) {
	for _, ci := range []string{"", "1"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestToolChild$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		text := string(out)
		if !strings.Contains(text, "strata-no-such-tool is not installed or not on PATH: apt-get install -y strata-no-such-tool") {
			t.Errorf("CI=%q: the output does not name the tool and how to install it:\n%s", ci, text)
		}
		if strings.Contains(text, "Tool returned") {
			t.Errorf("CI=%q: the test went on without the tool:\n%s", ci, text)
		}
		switch ci {
		case "":
			if err != nil || !strings.Contains(text, "--- SKIP: TestToolChild") {
				t.Errorf("without CI: want a skip, got %v:\n%s", err, text)
			}
		default:
			if err == nil || !strings.Contains(text, "--- FAIL: TestToolChild") || !strings.Contains(text, "CI is set") {
				t.Errorf("with CI: want a failure, got %v:\n%s", err, text)
			}
		}
	}
}

func TestToolFound(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(exe))
	if p := Tool(t, filepath.Base(exe), "it is this test binary"); p != exe {
		t.Fatalf("Tool found %q, want %q", p, exe)
	}
}
