{% set d = '/tmp/clio-states/' ~ grains['id'] %}
changed_file:
  file.managed:
    - name: {{ d }}/changed.txt
    - contents: |
        line one
        line two new
    - makedirs: True
unchanged_file:
  file.managed:
    - name: {{ d }}/same.txt
    - contents: same
    - makedirs: True
