import pytest

from optzoo.repro.data import find_data_file


@pytest.fixture(scope="session")
def facebook_path():
    path = find_data_file("ego-facebook.txt")
    if path is None:
        pytest.skip("ego-facebook.txt not found (set OPTZOO_DATA_DIR or keep ../shared/data)")
    return path
