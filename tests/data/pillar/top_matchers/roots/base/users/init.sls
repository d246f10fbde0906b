users:
  carol: {uid: 1003}
