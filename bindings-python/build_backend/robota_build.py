"""PEP 517 build backend of the ``robota`` source distribution: maturin, after checking that the
machine can build Rust.

pip falls back to the sdist when no prebuilt wheel matches the platform (or when asked to build
from source). maturin then needs ``cargo``; without it the user would see a cargo/maturin error
that does not say what to do. This backend says it instead: install Rust, or install a wheel.
Every hook is maturin's own; only the ones that compile are guarded.
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict, List, Optional

import maturin

_NO_RUST = """
robota: building robota from source needs a Rust toolchain (cargo 1.95 or newer), and no `cargo`
was found on PATH{cargo_env}.

pip builds from source when no prebuilt wheel fits this platform or Python, or when told to
(--no-binary). Either:
  * install a prebuilt wheel instead:
        pip install --only-binary=:all: robota
    (wheels exist for CPython >= 3.10 on Linux x86_64/aarch64 with glibc >= 2.17, Linux x86_64
    with musl, macOS and Windows x86_64), or
  * install Rust (https://rustup.rs), open a new shell so `cargo` is on PATH, and retry.
"""


def _require_cargo() -> None:
    explicit = os.environ.get("CARGO")
    if explicit and shutil.which(explicit):
        return
    if shutil.which("cargo"):
        return
    cargo_env = f" (CARGO={explicit!r} is not an executable)" if explicit else ""
    raise SystemExit(_NO_RUST.format(cargo_env=cargo_env))


def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    """maturin's extra build requirements for a wheel."""
    return list(maturin.get_requires_for_build_wheel(config_settings))


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    """maturin's extra build requirements for an sdist."""
    return list(maturin.get_requires_for_build_sdist(config_settings))


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    """maturin's extra build requirements for an editable install."""
    return list(maturin.get_requires_for_build_editable(config_settings))


def prepare_metadata_for_build_wheel(
    metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None
) -> str:
    """The wheel's metadata (maturin runs `cargo metadata`)."""
    _require_cargo()
    return str(maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings))


def prepare_metadata_for_build_editable(
    metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None
) -> str:
    """The editable install's metadata (maturin runs `cargo metadata`)."""
    _require_cargo()
    return str(maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings))


def build_wheel(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    """Compiles the extension and builds the wheel."""
    _require_cargo()
    return str(maturin.build_wheel(wheel_directory, config_settings, metadata_directory))


def build_editable(
    wheel_directory: str,
    config_settings: Optional[Dict[str, Any]] = None,
    metadata_directory: Optional[str] = None,
) -> str:
    """Compiles the extension and builds an editable wheel."""
    _require_cargo()
    return str(maturin.build_editable(wheel_directory, config_settings, metadata_directory))


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    """Builds the source distribution (needs no compiler)."""
    return str(maturin.build_sdist(sdist_directory, config_settings))
