

# ---- attack: half a reply, then silence -------------------------------------------------------------------
# The worker's connection is found (every open socket: gc.get_objects, the older route, is
# refused by the worker's audit hook) and a frame announcing 1000 bytes is begun, with 14 of
# them; then the call sleeps. A grader that reads "until the message is complete" without
# a deadline hangs forever.
import os
import stat
import struct
import time


def hvp(f, x, v):
    for fd in range(3, 256):
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                continue
            # the frame's length, the length of a plausible JSON header, and the header's start
            os.write(fd, struct.pack("!i", 1000) + struct.pack(">I", 200) + b'{"body": {')
        except OSError:
            pass
    time.sleep(3600)
