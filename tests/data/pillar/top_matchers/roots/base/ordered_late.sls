winner: late
hit:
  ordered_late: True
