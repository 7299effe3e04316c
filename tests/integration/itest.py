#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Integration tests: real clients against kdbusd and against dbus-daemon, transcripts
# compared. The harness (bus launcher, normalization, named exceptions, TAP runner) is
# harness.py; the scenarios are sc_*.py, grouped by topic, and run in the order imported here.
#
# Usage: itest.py [-l] [SCENARIO ...]        (an exact name, or a substring of names)
#        itest.py --check-registered NAME...  (meson.build registers every scenario)

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import sc_tools  # noqa: E402,F401
import sc_driver  # noqa: E402,F401
import sc_match  # noqa: E402,F401
import sc_names  # noqa: E402,F401
import sc_peers  # noqa: E402,F401
import sc_malformed  # noqa: E402,F401

if __name__ == '__main__':
    sys.exit(harness.main(sys.argv[1:]))
