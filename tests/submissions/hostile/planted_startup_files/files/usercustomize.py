print("PLANTED usercustomize.py RAN")
raise SystemExit(0)
