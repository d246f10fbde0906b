ok:
  fine: {{ grains["id"] }}
