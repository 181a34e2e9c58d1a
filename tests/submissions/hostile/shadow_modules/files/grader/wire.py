print("SHADOW grader.wire imported")
