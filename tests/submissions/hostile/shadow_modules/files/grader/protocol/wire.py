print("SHADOW grader.protocol.wire imported")
