#!/usr/bin/env python3
"""Proves ffi/abi/check-abi.py refuses each kind of C ABI break and passes the unchanged ABI.

Each test writes a mutated copy of include/robota.h (and, where needed, of the baseline) into a
temporary directory and runs the real check against it and the built librobota.so.

Usage: python ffi/abi/test_check_abi.py [--lib path/to/librobota.so]   (unittest; run in the venv of
ffi/abi/requirements.txt)
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
CHECK = HERE / "check-abi.py"
HEADER = ROOT / "include" / "robota.h"
LIB = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "debug" / "librobota.so"


def read_define(text: str, name: str) -> int:
    match = re.search(rf"^#define {name} (\d+)$", text, re.M)
    assert match is not None, f"the header has no {name}"
    return int(match[1])


class CheckAbiTest(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = Path(self.tmp.name)
        self.baselines = self.dir / "abi"
        self.baselines.mkdir()
        self.header_text = HEADER.read_text(encoding="utf-8")
        self.major = read_define(self.header_text, "ROBOTA_ABI_VERSION_MAJOR")
        self.minor = read_define(self.header_text, "ROBOTA_ABI_VERSION_MINOR")
        self.baseline_name = f"robota-abi-{self.major}.json"
        committed = HERE / self.baseline_name
        (self.baselines / self.baseline_name).write_text(committed.read_text(encoding="utf-8"), encoding="utf-8")

    def tearDown(self) -> None:
        self.tmp.cleanup()

    def mutate(self, old: str, new: str, text: str | None = None) -> str:
        text = self.header_text if text is None else text
        self.assertEqual(text.count(old), 1, f"the mutation's anchor {old!r} must occur once in the header")
        return text.replace(old, new)

    def run_check(self, header_text: str, *extra: str) -> subprocess.CompletedProcess[str]:
        header = self.dir / "robota.h"
        header.write_text(header_text, encoding="utf-8")
        return subprocess.run(
            [sys.executable, str(CHECK), "--header", str(header), "--lib", str(LIB), "--baseline-dir", str(self.baselines), *extra],
            capture_output=True,
            text=True,
            timeout=120,
        )

    def assert_refused(self, result: subprocess.CompletedProcess[str], *messages: str) -> None:
        self.assertEqual(result.returncode, 1, f"expected a refusal; stdout={result.stdout!r} stderr={result.stderr!r}")
        for message in messages:
            self.assertIn(message, result.stderr)

    def test_the_unmodified_header_passes(self) -> None:
        result = self.run_check(self.header_text)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn(f"ABI {self.major}.{self.minor} keeps", result.stdout)
        self.assertNotIn("addition", result.stdout)

    def test_a_removed_function_is_refused(self) -> None:
        header = self.mutate("const char *robota_version(void);\n", "")
        self.assert_refused(self.run_check(header), "function robota_version was removed or renamed")

    def test_a_renamed_function_is_refused(self) -> None:
        header = self.mutate("void robota_string_free(char *s);", "void robota_str_free(char *s);")
        self.assert_refused(self.run_check(header), "function robota_string_free was removed or renamed")

    def test_a_changed_parameter_type_is_refused(self) -> None:
        header = self.mutate("void robota_string_free(char *s);", "void robota_string_free(const char *s, size_t len);")
        self.assert_refused(
            self.run_check(header),
            "function robota_string_free changed signature: was void (char *), now void (const char *, size_t)",
        )

    def test_a_changed_return_type_is_refused(self) -> None:
        header = self.mutate("const char *robota_version(void);", "char *robota_version(void);")
        self.assert_refused(self.run_check(header), "function robota_version changed signature")

    def test_a_changed_status_code_is_refused(self) -> None:
        header = self.mutate("#define ROBOTA_STATUS_TIMEOUT 9\n", "#define ROBOTA_STATUS_TIMEOUT 99\n")
        self.assert_refused(self.run_check(header), "constant ROBOTA_STATUS_TIMEOUT changed: was 9, now 99")

    def test_a_removed_status_code_is_refused(self) -> None:
        header = self.mutate("#define ROBOTA_STATUS_TIMEOUT 9\n", "")
        self.assert_refused(self.run_check(header), "constant ROBOTA_STATUS_TIMEOUT was removed")

    def test_a_changed_struct_layout_is_refused(self) -> None:
        header = self.mutate("  uint32_t kind_len;\n", "  uint64_t kind_len;\n")
        self.assert_refused(self.run_check(header), "struct robota_event changed layout", "uint64_t kind_len @0")

    def test_reordered_struct_fields_are_refused(self) -> None:
        event = re.search(r"typedef struct robota_event \{.*?\} robota_event;", self.header_text, re.S)
        assert event is not None
        fields = re.findall(r"^  [^/\n].*;$", event[0], re.M)
        self.assertGreaterEqual(len(fields), 2)
        swapped = event[0].replace(fields[0], "@@FIRST@@").replace(fields[1], fields[0]).replace("@@FIRST@@", fields[1])
        header = self.header_text.replace(event[0], swapped)
        self.assert_refused(self.run_check(header), "struct robota_event changed layout: ", "fields were [")

    def test_a_changed_callback_typedef_is_refused(self) -> None:
        header = self.mutate("typedef void (*robota_free_callback)(void *user_data);", "typedef int (*robota_free_callback)(void *user_data);")
        self.assert_refused(self.run_check(header), "typedef robota_free_callback changed")

    def test_an_added_function_without_a_minor_bump_is_refused(self) -> None:
        header = self.mutate("void robota_string_free(char *s);", "void robota_string_free(char *s);\n\nuint32_t robota_new_feature(void);")
        self.assert_refused(
            self.run_check(header),
            f"additions to the ABI (function robota_new_feature) need ROBOTA_ABI_VERSION_MINOR raised above {self.minor}",
        )

    def test_an_added_constant_without_a_minor_bump_is_refused(self) -> None:
        header = self.mutate("#define ROBOTA_STATUS_TIMEOUT 9\n", "#define ROBOTA_STATUS_TIMEOUT 9\n#define ROBOTA_STATUS_NEW_KIND 99\n")
        self.assert_refused(self.run_check(header), "constant ROBOTA_STATUS_NEW_KIND", "need ROBOTA_ABI_VERSION_MINOR raised")

    def test_an_added_constant_with_a_minor_bump_passes_and_update_records_it(self) -> None:
        header = self.mutate("#define ROBOTA_STATUS_TIMEOUT 9\n", "#define ROBOTA_STATUS_TIMEOUT 9\n#define ROBOTA_STATUS_NEW_KIND 99\n")
        header = self.mutate(
            f"#define ROBOTA_ABI_VERSION_MINOR {self.minor}\n", f"#define ROBOTA_ABI_VERSION_MINOR {self.minor + 1}\n", header
        )
        result = self.run_check(header)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertIn("1 addition(s) not yet recorded", result.stdout)
        result = self.run_check(header, "--update")
        self.assertEqual(result.returncode, 0, result.stderr)
        recorded = json.loads((self.baselines / self.baseline_name).read_text(encoding="utf-8"))
        self.assertEqual(recorded["abi_minor"], self.minor + 1)
        self.assertEqual(recorded["constants"]["ROBOTA_STATUS_NEW_KIND"], "99")
        # Recorded: the addition is now part of the ABI, and lowering the minor again is refused.
        self.assertEqual(self.run_check(header).returncode, 0)
        self.assert_refused(self.run_check(self.header_text), "ROBOTA_ABI_VERSION_MINOR went down", "constant ROBOTA_STATUS_NEW_KIND was removed")

    def test_a_function_the_library_does_not_export_is_refused(self) -> None:
        header = self.mutate("void robota_string_free(char *s);", "void robota_string_free(char *s);\n\nuint32_t robota_new_feature(void);")
        header = self.mutate(
            f"#define ROBOTA_ABI_VERSION_MINOR {self.minor}\n", f"#define ROBOTA_ABI_VERSION_MINOR {self.minor + 1}\n", header
        )
        self.assert_refused(
            self.run_check(header), "function robota_new_feature is declared in the header but the library does not export it"
        )

    def test_a_symbol_no_longer_exported_is_refused(self) -> None:
        path = self.baselines / self.baseline_name
        baseline = json.loads(path.read_text(encoding="utf-8"))
        baseline["symbols"].append("robota_gone")
        path.write_text(json.dumps(baseline), encoding="utf-8")
        self.assert_refused(self.run_check(self.header_text), "symbol robota_gone is no longer exported by the library")

    def test_update_refuses_to_record_a_break(self) -> None:
        path = self.baselines / self.baseline_name
        before = path.read_text(encoding="utf-8")
        header = self.mutate("const char *robota_version(void);\n", "")
        self.assert_refused(self.run_check(header, "--update"), "function robota_version was removed")
        self.assertEqual(path.read_text(encoding="utf-8"), before)

    def test_a_major_bump_asks_for_a_new_baseline(self) -> None:
        header = self.mutate(
            f"#define ROBOTA_ABI_VERSION_MAJOR {self.major}\n", f"#define ROBOTA_ABI_VERSION_MAJOR {self.major + 1}\n"
        )
        header = self.mutate("const char *robota_version(void);\n", "", header)
        self.assert_refused(
            self.run_check(header),
            f"ROBOTA_ABI_VERSION_MAJOR is {self.major + 1}, above the newest baseline (robota-abi-{self.major}.json)",
            "--update",
        )
        result = self.run_check(header, "--update")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue((self.baselines / f"robota-abi-{self.major + 1}.json").is_file())
        self.assertEqual(self.run_check(header).returncode, 0)

    def test_a_header_that_does_not_parse_is_an_error_not_a_pass(self) -> None:
        header = self.mutate("void robota_string_free(char *s);", "void robota_string_free(char *s")
        result = self.run_check(header)
        self.assertEqual(result.returncode, 2, result.stdout)
        self.assertIn("does not parse as C11", result.stderr)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--lib":
        LIB = Path(sys.argv[2])
        del sys.argv[1:3]
    if not LIB.is_file():
        sys.exit(f"test_check_abi: {LIB} does not exist: build it (cargo build -p robota-ffi) or pass --lib")
    unittest.main(verbosity=1)
