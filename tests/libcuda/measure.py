#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR MIT
"""Usage: measure.py TIMEOUT CMD...

Runs CMD (output discarded) and prints one line:
  RC WALL_SECONDS CPU_SECONDS MAX_RSS_KIB
CPU is user + system time of CMD (getrusage of the children), the figure
that does not depend on how busy the machine is; WALL is the elapsed time.
RC is 124 when CMD ran past TIMEOUT seconds (it is killed).
"""
import resource
import subprocess
import sys
import time


def main(argv):
    limit, cmd = float(argv[0]), argv[1:]
    t0 = time.monotonic()
    try:
        rc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=limit).returncode
    except subprocess.TimeoutExpired:
        rc = 124
    wall = time.monotonic() - t0
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    print('%d %.2f %.2f %d' % (rc, wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
