def test_login_with_real_browser_reaches_home(page, login, make_user, screenshot):
    make_user("lead", role="viewer")
    login("lead")
    assert page.locator("header .brand").inner_text() == "Night Watch Memory"
    screenshot("home")
