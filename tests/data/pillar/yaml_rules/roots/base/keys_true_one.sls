keys_true_one:
  1: int key
  true: bool key
