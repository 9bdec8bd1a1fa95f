"""The local modules of a plugin, found by reading its imports (issue 30, item 5)."""

import textwrap

from ladderlab.utils.sources import local_imports


def write(folder, files):
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_local_modules_of_a_plugin_file_are_what_it_imports_from_its_folder_transitively(tmp_path):
    write(tmp_path, {
        "plugin.py": """
            import json
            import helper
            from tools import scaling
            from tools.extra import thing
            import numpy as np

            def later():
                import deferred
        """,
        "helper.py": "from chained import VALUE\n",
        "chained.py": "VALUE = 1\n",
        "tools/__init__.py": "",
        "tools/scaling.py": "from . import common\nfrom .extra import thing\n",
        "tools/common.py": "",
        "tools/extra.py": "thing = 1\n",
        "deferred.py": "",
        "unrelated.py": "",
        "tools/unused.py": "",
    })
    found = {str(path.relative_to(tmp_path)) for path in local_imports(tmp_path / "plugin.py", tmp_path)}
    assert found == {"helper.py", "chained.py", "tools/__init__.py", "tools/scaling.py", "tools/extra.py",
                     "tools/common.py", "deferred.py"}


def test_a_package_plugin_counts_only_modules_of_its_own_package(tmp_path):
    write(tmp_path, {
        "mypkg/__init__.py": "",
        "mypkg/attacks.py": "from mypkg.helpers import f\nfrom .more import g\nimport otherpkg\n",
        "mypkg/helpers.py": "",
        "mypkg/more.py": "",
        "otherpkg/__init__.py": "",
    })
    found = {str(path.relative_to(tmp_path)) for path in local_imports(tmp_path / "mypkg" / "attacks.py", tmp_path,
                                                                       package="mypkg", top="mypkg")}
    assert found == {"mypkg/__init__.py", "mypkg/helpers.py", "mypkg/more.py"}


def test_a_file_that_does_not_parse_has_no_local_modules(tmp_path):
    write(tmp_path, {"plugin.py": "import helper\n", "helper.py": "def broken(:\n"})
    assert local_imports(tmp_path / "plugin.py", tmp_path) == [tmp_path / "helper.py"]
