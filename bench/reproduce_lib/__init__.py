"""The reproduction benchmark behind ``bench/reproduce``: plans (which CLI commands each experiment
runs, per mode), a resumable step runner, the data/model preparation helpers and the RESULTS.md writer.

Everything the benchmark measures comes out of the real ``laya-inspect`` CLI, run as subprocesses;
the report is generated only from the JSON/CSV files those commands wrote.
"""
