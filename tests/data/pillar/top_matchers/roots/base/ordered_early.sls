winner: early
hit:
  ordered_early: True
