// Harper's 2_dataLoad.mjs (issue 22): see harper_compat.h.
//
// Carried: 42 of its 68 cases, in order. Left out (26): 17 csv_file_load, 3 csv_url_load, 2
// csv_data_load, 4 SQL (the 3 csv_url_load and 1 SQL are it.skip in one of its stored versions).
// First come the databases and tables of 1_environmentSetup it writes to (23 of that file's cases,
// same titles). Stand-ins for what the CSV loads would have put there, each titled "setup: ...":
// suppliers 10 and 19 as Suppliers.csv has them (only the columns read: "search for specific value
// from CSV load" and "csv bulk load update confirm" read them), and an update of supplier 19
// standing in for the csv_data_load "csv bulk load update". The JSON fixtures the inserts send
// (integrationTests/apiTests/json/*.json) are below, record for record; breed.json's non-ASCII
// letters are written as JSON escapes.
#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/node/harper_compat.h"
#include "tests/node/harper_data.h"

namespace cairn::testing::harper {
namespace {

// An array of n elements (Harper's `x.length === n`).
bool LengthIs(const json& v, size_t n) { return v.is_array() && v.size() == n; }
// JavaScript's falsy (undefined reads as null here).
bool Falsy(const json& v) { return v.is_null() || v == false || v == 0 || v == ""; }

// JSON.stringify(body) contains `part`, the body's keys in the order it sent them: Harper's
// searchByHash reads the order of rows and of keys so.
std::function<bool(const std::string&)> StringifiedHas(std::string part) {
  return [part](const std::string& text) {
    const nlohmann::ordered_json b = nlohmann::ordered_json::parse(text, nullptr, false);
    return !b.is_discarded() && b.dump().find(part) != std::string::npos;
  };
}

// Harper's insert(db, table, records, expected) (utils/insert.mjs): 200, and the body's text
// says "inserted" and `expected`.
Case Insert(std::string title, std::string db, std::string table, json records,
            std::string expected) {
  json request = {
      {"operation", "insert"}, {"schema", db}, {"table", table}, {"records", std::move(records)}};
  return Case(std::move(title), std::move(request), 200, TextHas({"inserted", expected}));
}
// Harper's searchByHash(db, table, hash, values, attributes, expected) (utils/search.mjs): 200,
// and JSON.stringify(body) contains `expected`.
Case SearchByHash(std::string title, std::string db, std::string table, std::string hash,
                  json values, json attributes, std::string expected) {
  json request = {{"operation", "search_by_hash"},
                  {"schema", db},
                  {"table", table},
                  {"hash_attribute", hash},
                  {"hash_values", std::move(values)},
                  {"get_attributes", std::move(attributes)}};
  return Case(std::move(title), std::move(request), 200, AnyBody, "",
              StringifiedHas(std::move(expected)));
}

// json/longText.json: 25 records {id, remarks}.
json LongText() {
  return json::parse(R"json([
{"id":1,"remarks":"RIVERFRONT LIFESTYLE! New dock, new roof and new appliances. For sale fully furnished. Beautiful custom-built 2-story home with pool. Panoramic river views and open floor plan -- great for entertaining. Hardwood floors flow throughout. Enjoy sunsets over the St. Johns from covered lanai or family room with wood-burning fireplace. Large back yard, dock, boat lift, kayak area...endless lifestyle options for fishing, boating or just chilling. Spacious master suite includes seating area with gas fireplace. Additional bedroom or office, pool bath, and laundry room on 1st floor. Upstairs loft area, perfect for a game room, plus two bedrooms with upgraded baths in each. Kitchen features stainless steel appliances, granite countertops, cooking island, and walk-in pantry. 3-car garage with abundant"},
{"id":2,"remarks":"Come see the kitchen remodel and new wood flooring.  Custom built by Howard White in 2007, this immaculate Deerwood home enjoys a view of the 18th fairway. From the moment you step into the foyer, you will be impressed with the bright, open floor plan. The Master suite features a large en suite bath with his and hers custom closets. The kitchen features high-end appliances,cabinetry and granite countertops. Retreat upstairs to an expansive library with cherry bookshelves. Additional bedrooms are spacious with large walk-in closets for extra storage. Plantation shutters throughout. Relax in the large hot tub/small pool with lounge chair shelf and fountain. Side entry 3 car garage is connected by a breezeway to home. Portion of back yard fenced for small dog."},
{"id":3,"remarks":"This custom built dream home is stunningly gorgeous!  It is a 5+ acres luxury equestrian property with access to Jennings State Forest from your backyard, no need to trailer your horses anywhere for a beautifully scenic peaceful ride.  This amazing home includes impressive Brazilian hardwood floors, plantation shutters throughout, granite countertops, triple tray and wood beam ceilings and so much more.  Builder's touches include 24'' tiles, rounded corner walls, 5'' baseboards, 10 ft. ceilings, in-wall vacuum system and many more unique upgrades.  There are extensive custom touches on this property from the mailbox to the unique 3000 sq. ft. two level 3-stall barn with tons of storage space."},
{"id":4,"remarks":"Make this stunning traditional two story red brick house your forever home. Custom built in 2004, this home is spacious enough for large gatherings and cozy enough for small get togethers. Located on a large corner lot with side entry four car garage and fenced backyard, this home has it all inside and out. Inviting foyer is flanked by formal living room and dining room with wood floors, crown molding, and large windows. Large eat-in kitchen with custom made Pine Cottage cabinets, granite countertops, and stainless steel appliances is conveniently located next to family room. Separate downstairs flex space with attached full bath currently used as a playroom could be used as a 5th bedroom/guest or mother-in-law suite (no closet, but one could be easily added.)"},
{"id":5,"remarks":"A beautiful waterfront home located on a deep water canal providing quick access to the St. Johns River and ocean. Spacious and open, the downstairs is perfect for both family activities and entertaining. Central to this is a large kitchen with extensive granite countertops, upgraded appliances, separate island and an adjacent laundry room. A great room with fireplace flows into Florida & game rooms which overlook the canal. From the leaded glass front door, the extensive crown molding, to the hardwood, marble and tile flooring, there are numerous upgrades throughout the house. Outside, a large backyard includes three separate patios surrounded by tropical landscaping maintained by automatic sprinklers. Along the concrete bulkhead, there are docks, davits and a 9,000lb. boat lift w Remote."},
{"id":6,"remarks":"Walk inside this Perfect Family Home and make it your own. Spacious Foyer opens to formal living room. Family room features brick fireplace, wet bar, and sliding glass doors to beautiful patio and lushly landscapped backyard. Recently updated Kitchen boasts granite countertops, abundance of cabinets with pull out drawers and breakfast nook. Large Master Suite offers multiple closets, separate vanities,walk-in shower and garden tub. Spacious room sizes and storage throughout.Bedroom and Bath arrangements were built for today's living and convenience.  Walk to neighborhood parks. A rated Hendricks Elementary also a walk or bike ride away. Pretty median treed street filled with homes of the era dead ending to riverfront homes."},
{"id":7,"remarks":"Wow! Pow! This one will knock you over! Like New! Meticulously cared for David Weekley home with all the bells and whistles! Telescoping sliders Open onto huge screened brick paver lanai with massive fireplace at end. Open concept floor plan has hardwood floors in all common areas, 3 way split bedroom plan, also has a study, formal dining room, sunroom, breakfast room - plenty of storage space, and room to spread out. Kitchen features a gorgeous large island, granite countertops, walk in pantry and upgraded stainless appliances lanai overlooks the park like, almost 1/2 acre fully fenced backyard with creek and preserve behind. Gated community no through traffic. Front view is a lake with fountain Heart of Mandarin.  If I could, I would buy this one myself!"},
{"id":8,"remarks":"Rare opportunity to own a home on fabulous Heaven Trees road! OPEN HOUSE Saturday 4/28 from 2 - 5! This beautiful brick home is move in ready! This home offers abundant living space with light filled rooms and hardwood floors. The kitchen features a gas range, double ovens, and granite countertops. Enjoy the expansive backyard with complete privacy. Owners have made several improvements including: New A/C 6/16, New Electric Box and Circuit Breakers 11/16, Front Septic Tank and Drainage Field Replaced 8/16, Back Septic Tank Improvements 4/18, New Hot Water Heater 5/14, New Soft Water Treatment System 7/12, Wet Bar installed in Family Room with beverage cooler, ice maker; and more. Please note: Fogged window in Sunroom is being replaced!"},
{"id":9,"remarks":"Wow! Spectacular opportunity to live in a charming, yet spacious, brick home in one the most highly desirable communities, Ortega Forest. This beautifully updated, one-story, pool home will be a beautiful place to make memories. The home features a large eat-in kitchen that has been fully renovated with custom cabinetry, granite countertops and upgraded, stainless appliances. A formal living and huge dining room are located at the front of the home. The family room/den features a gorgeous wood burning fireplace and overlooks the sparkling pool and backyard. The living and sleeping areas are separated. The large master bedroom features sizable his/her closets. The master and guest baths are renovated with custom cabinetry and marble countertops."},
{"id":10,"remarks":"Lovely updated home in desired gated community.  Large corner lot with new paver circular driveway. Great first impression entryway to open floor plan with warm wood floors. Separate Dining room, huge Family room with gas fireplace and custom mantel, and sitting or casual eating area. Spacious Kitchen with quartz countertops, stainless steel appliances, gas range, and breakfast bar. Large laundry room between garage and kitchen. Split bedrooms with private Master Bedroom overlooking fenced, landscaped backyard and screened lanai. Master Bath has granite countertops, double sinks, wood grain tile floors, tub and separate shower. Two guest Bedrooms and Bath opposite the master along with a 4th Bedroom or Bonus room upstairs with another full Bath. Close to Beaches and Shopping!"},
{"id":11,"remarks":"Historic Avondale home designed in the Prairie School style -- an architectural design made famous by Frank Lloyd Wright and Jacksonville resident Henry John Klutho. This 3 bedroom, two bath, 2,202 sq ft home has maintained its vintage appeal while combining modern updates, such as renovated kitchen with beverage fridge and wine storage. Granite countertops and 2-yr-old SS appliances. Updates meld beautifully with original Prairie School window casings with grids, glass knobs, hardwood inlay floors, 10'' baseboards, picture rail molding and all original doors. Beautifully glassed sun room at the front of the house is a perfect office or reading room. Gorgeous French doors open to private backyard built for entertaining. Two-car garage includes back entry, extra storage and partial bathroom"},
{"id":12,"remarks":"MUCH bigger than it looks! This remodeled 4bed/2.5bath Avondale home has a separate studio apartment which rents for $750 a month. Relax on the front porch or walk to Boone Park, numerous restaurants, and shops. The living room w/ the original fireplace has French doors which lead to a sun room/office. The hardwood floors have been refinished beautifully. The spacious kitchen has finely crafted cabinets, gorgeous granite countertops, and a  walk-in pantry. The laundry room includes a washer and dryer. A unique rock and metal design surrounds the jetted tub. A large linen closet is near by. 2 beds and 2 baths are on the main floor. Two bedrooms and a half bath are on the second floor.  A screened porch overlooks the fully fenced back yard."},
{"id":13,"remarks":"*DON'T MISS THIS BEAUTIFUL DAVID WEEKLEY BELMONTE MODEL*ONE OF THE LARGEST LOTS IN CROSSWATER*GREAT FOR OUTDOOR FUN!*LUXURIOUS LIVING!*HIGH TECH HOME*CROWN MOLDING, CUSTOM PLANTATION SHUTTERS, 18'' TILE & CUSTOM WHITE OAK HARDWOOD FLOORING THRUOUT THE HOME*LARGE OFFICE W/GLASS FRENCH DOORS*FORMAL DINING ROOM W/PICTURE FRAME MOLDING*GOURMET KITCHEN W/42''CUSTOM CABINETRY & GRANITE COUNTERTOPS, STAINLESS STEEL APPLIANCES, & HUGE ISLAND OPEN TO THE GREAT ROOM W/TRAY CEILING & SURROUND SOUND SPEAKERS*MASTER BEDROOM SUITE W/TRAY CEILING W/BEADBOARD INSET AND SHOWER W/OVERHEAD RAINFOREST HEAD*2 MORE BEDROOMS & OPEN ''FLEX'' AREA*COVERED LANAI OVERLOOKING THE HUGE FENCED BACKYARD*3-CAR GARAGE*''NEST'' THERMOSTAT & AT&T HOME SECURITY W/WIFI ACCESS*WATER SOFTENER*LOTS MORE!!!"},
{"id":14,"remarks":"This is a 4 bedroom, 3 bath, with additional tiled sunroom single family home located in the Pablo Bay community. Upgrades galore! This home offers gorgeous marble flooring throughout the living areas, high ceilings, an upgraded kitchen with granite countertops, a tile backsplash, and stainless steel appliances! Relax and enjoy the lake view from the tiled sunroom or the expansive fenced backyard! Will have a 1 year home warranty! Also listed for rent under MLS 903970"},
{"id":15,"remarks":"Spacious & updated 2-story home on large preserve lot nearly 1/2 acre! Concrete block constr. & desirable ICW location near JTB, shopping, dining & the beach! Great split BD flrpln w/soaring ceilings features 4BD + office, upstairs loft & 3 full BA. Beautiful tiled kitchen has granite countertops, island, newer refrigerator, cooktop, oven & convection microwave (2 yrs), breakfast bar & nook. Separate DR, LR & Fam Rm all w/crown molding & wood laminate flrs; FP in Fam Rm. Remodeled BA w/granite countertops & gorgeous travertine tiled showers & flrs. New Roof 6/2014 & New upgraded AC system 10/2015. Huge owner suite w/Jacuzzi tub, sep. shower, 2 walk-in closets & bonus rm w/French doors. Relaxing back porch w/phantom retractable screen overlooks the charming patio & huge stunning backyard!**"},
{"id":16,"remarks":"Location ... Location ...GOURGEOUS HOME in a Heart of MANDARIN,Next to Loretto Magnet schoolClose to I-295, shopping & entertainment. Gated community! Loaded with upgrades: GRANITE countertops,upgraded kitchen cabs w/crown molding, st steel appl, New carpets,New exterior and interior paint,Rain soft water softner, tile floors, bay windows, addtl loft + sep. Internet center, fireplace, lots of arches& niches, 2 story family room, huge covered porch overlooking, Planing to put the new sod in the front and sides, landscaped backyard and much more! MUST SEE!"},
{"id":17,"remarks":"WELCOME HOME! MOVE-IN-READY! Spacious & Beautifully updated home with over 3500 sq ft of comfort. Great for everyday living or entertaining. 5 Bedrooms and 3.5 baths. Spacious 1st floor owner suite with a huge walking closet, sitting area, updated master bath with double vanities, separate shower & garden tub. Updated kitchen with granite countertops, food prep island, all appliances, plenty of cabinets and breakfast nook. Inviting family room with fireplace and large picture windows that bring in natural light throughout. Formal dining & living rooms. 2nd floor offers spacious bonus room, 4 large bedrooms and 2 full baths. Hard wood floors, new roof 2016, many updates throughout. Inviting screened in porch, large back yard backs up to wooded preserve. Great Community amenities. A must see"},
{"id":18,"remarks":"Welcome to the very desirable community of ST. JOHNS LANDING. This 4 bedroom 2 bathroom home is located in a riverfront community. It has been totally upgraded, boasting detailed crown molding, new kitchen cabinets, Travertine Stone Floors & granite countertops throughout.  6 foot Jacuzzi tub in master bath and separate shower. Prewired alarm system. Central Heat & A/C replaced a year ago, fireplace and an energy saving on demand water heater are just some of the features this beautiful home has to offer.(BRAND NEW ROOF is Included).  This home sits on a corner lot with a fenced backyard, and a tiled heated and cooled lanai overlooking the plush lawn and playset. Walking distance to the community clubhouse, playground, fishing dock, boat ramp & pool. Buyer to verify square footage."},
{"id":19,"remarks":"Location ... Location ...GOURGEOUS HOME in a Heart of MANDARIN,Next to Loretto Magnet schoolClose to I-295, shopping & entertainment. Gated community! Loaded with upgrades: GRANITE countertops,upgraded kitchen cabs w/crown molding, st steel appl, New carpets,New exterior and interior paint,Rain soft water softner, tile floors, bay windows, addtl loft + sep. Internet center, fireplace, lots of arches& niches, 2 story family room, huge covered porch overlooking, Planing to put the new sod in the front and sides, landscaped backyard and much more! MUST SEE!"},
{"id":20,"remarks":"This house is ready for you to call it home! No stone was left unturned when it came to upgrades in this gorgeous home! As you walk through the front door, you'll be immediately impressed by the 20ft ceiling in the Grand Foyer. Beautiful hardwood floors throughout the first floor, Gourmet Kitchen, Double Ovens, Granite Countertops, Stainless Steel appliances. Need space? How about this: 5 bedrooms, 4 full bath (1 full bath and bedroom downstairs), plenty of room for a growing family. Need a place to escape to relax? Look no further, enjoy the peace and serenity that your large backyard offers, as you enjoy the evenings in your screened-in lanai, all behind the privacy of the preserve."},
{"id":21,"remarks":"BACK ON MARKET!!MOTIVATED SELLER, OFFERING A $3000 CONCESSION TOWARDS NEW FLOORING. CONCESSION PAID AT CLOSING! Come see this gorgeous 4 bedroom 4 bath home in beautiful Hampton Glen. This home has two large master bedrooms with ensuites with sitting area. The loft bedroom upstairs also has a full bath. All baths have been updated with granite countertops and tile. If you love to cook you will love this kitchen. This large kitchen has beautiful granite countertops and tile. Everything has been updated. The roof is brand new!!! It was replaced January 2017. The house has been completely painted inside and out. Come and enjoy the serenity of the backyard in your large screened in patio and view the tall pines of the preserve swaying in the breeze."},
{"id":22,"remarks":"Beautiful pool home that has all the upgrades you're looking for.  4 Bedroom/2 bath with updated kitchen with granite countertops, stainless steel appliances including a Bosch dishwasher and double ovens.  Formal Living room, dining room & separate family room with vauled ceilings. Family room is wired for speakers. Tile floors in kitchen & b'fast area.  Hardwood floors are found in the family room and 2 bedrooms.  The master bedroom has french doors out to the screened pool area.  The bath has separate vanities with granite tops, remodeled shower with a seat & his and hers closets.  There is a pool and spa.  Both are heated using solar panels, no gas heater.  There is a Soothing waterfall feature that makes this outdoor area perfect for entertaining.  Fenced back yard as well."},
{"id":23,"remarks":"What a gem !!!! Located within walking distance to Bolles on a quiet cul de sac street, this brick home, with a circular drive,has it all! New roof in 2017, re-plumbed in 2016 and 2 HVAC systems ( inside and out -2008 and 2017). The kitchen has beenbeautifully updated with granite countertops and cream cabinets.  The kitchen opens to a large family room. The master suite has 2 walk-in closets and a large updated bath with jacuzzi and separate shower, separate dining room and formal living room with wood burning fireplace. Freshly painted and new tile throughout. There is a large shed in the backyard for additional storage in addition to the 2 car garage.This home was renovated in 2008 and 1,400 sq. ft. was added to the original plan. OPEN HOUSE SUNDAY 3/12/17 1:00-3:00"},
{"id":24,"remarks":"Designed for Generous Space and Flexibility for Family or Lifestyle! This Midcentury Modern Pool Home offers over 3000 sf of upgrades & classic design on almost 1/2 acre. Original Hardwood Floors, Lots of Natural Light, Freshly Painted Interior, Custom Kitchen, Granite countertops, Newer AC & New Carpet upstairs. Spacious rooms throughout include Living room w/Fireplace, Formal Dining and even larger Casual Dining, Breakfast room or Office. Family room with built-ins & pool bath could also be Mother-in-Law Suite with private bath or 4th Bedroom. Perfect Home for Entertaining with Private Backyard, Majestic Oaks, Expansive multi-level patio & Sparkling Pool. Plenty of room for RV/Boat Parking. All this in Desirable Beauclerc location convenient to I-295, Downtown, nearby Shops & Restaurants"},
{"id":25,"remarks":"Welcome to your new home in James Island. Easy commuting around the City, close to Town Center and JTB takes you to the beaches. You have it all with this home - Owner Suite is on the first floor, large bonus room upstairs with full bath, office, formal dining room, living room, and family room with fireplace. Amazing owner bath and large owner suite with beautiful ceilings. Split floor plan for the other two bedrooms which share a Jack and Jill bathroom. High ceilings, crown molding and so much more. Tile and wood flooring downstairs, gas range, granite countertops, fenced backyard, welcoming front entrance and large covered patio. Seller will consider reasonable offers. With accepted offer seller will provide credits for the fogged windows and a replacement stainless steel oven."}
])json");
}

// json/breed.json: 350 records {id, name, image, country, section}.
json Breeds() {
  return json::parse(R"json([
{"id":1,"name":"ENGLISH POINTER","image":"http://www.fci.be/Nomenclature/Illustrations/001g07.jpg","country":"GREAT BRITAIN","section":"British and Irish Pointers and Setters"},
{"id":2,"name":"ENGLISH SETTER","image":"http://www.fci.be/Nomenclature/Illustrations/002g07.jpg","country":"GREAT BRITAIN","section":"British and Irish Pointers and Setters"},
{"id":3,"name":"KERRY BLUE TERRIER","image":null,"country":"IRELAND","section":"Large and medium sized Terriers"},
{"id":4,"name":"CAIRN TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/004g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":5,"name":"ENGLISH COCKER SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/005g08.jpg","country":"GREAT BRITAIN","section":"Flushing Dogs"},
{"id":6,"name":"GORDON SETTER","image":"http://www.fci.be/Nomenclature/Illustrations/006g07.jpg","country":"GREAT BRITAIN","section":"British and Irish Pointers and Setters"},
{"id":7,"name":"AIREDALE TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/007g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":8,"name":"AUSTRALIAN TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/008g03.jpg","country":"AUSTRALIA","section":"Small sized Terriers"},
{"id":9,"name":"BEDLINGTON TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/009g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":10,"name":"BORDER TERRIER","image":null,"country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":11,"name":"BULL TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/011g03.jpg","country":"GREAT BRITAIN","section":"Bull type Terriers"},
{"id":12,"name":"FOX TERRIER (SMOOTH)","image":"http://www.fci.be/Nomenclature/Illustrations/012g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":13,"name":"ENGLISH TOY TERRIER (BLACK &TAN)","image":"http://www.fci.be/Nomenclature/Illustrations/013g03.jpg","country":"GREAT BRITAIN","section":"Toy Terriers"},
{"id":14,"name":"SWEDISH VALLHUND","image":"http://www.fci.be/Nomenclature/Illustrations/014g05.jpg","country":"SWEDEN","section":"Nordic Watchdogs and Herders"},
{"id":15,"name":"BELGIAN SHEPHERD DOG","image":null,"country":"BELGIUM","section":"Sheepdogs"},
{"id":16,"name":"OLD ENGLISH SHEEPDOG","image":"http://www.fci.be/Nomenclature/Illustrations/016g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":17,"name":"GRIFFON NIVERNAIS","image":"http://www.fci.be/Nomenclature/Illustrations/017g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":18,"name":"BRIQUET GRIFFON VENDEEN","image":"http://www.fci.be/Nomenclature/Illustrations/019g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":19,"name":"ARIEGEOIS","image":"http://www.fci.be/Nomenclature/Illustrations/020g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":20,"name":"GASCON SAINTONGEOIS","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":21,"name":"GREAT GASCONY BLUE","image":"http://www.fci.be/Nomenclature/Illustrations/022g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":22,"name":"POITEVIN","image":"http://www.fci.be/Nomenclature/Illustrations/024g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":23,"name":"BILLY","image":"http://www.fci.be/Nomenclature/Illustrations/025g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":24,"name":"ARTOIS HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/028g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":25,"name":"PORCELAINE","image":"http://www.fci.be/Nomenclature/Illustrations/030g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":26,"name":"SMALL BLUE GASCONY BLUE","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":27,"name":"BLUE GASCONY GRIFFON","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":28,"name":"GRAND BASSET GRIFFON VENDEEN","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":29,"name":"NORMAN ARTESIEN BASSET","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":30,"name":"BLUE GASCONY BASSET","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":31,"name":"BASSET FAUVE DE BRETAGNE","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":32,"name":"PORTUGUESE WATER DOG","image":"http://www.fci.be/Nomenclature/Illustrations/037g08.jpg","country":"PORTUGAL","section":"Water Dogs"},
{"id":33,"name":"WELSH CORGI CARDIGAN","image":"http://www.fci.be/Nomenclature/Illustrations/038g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":34,"name":"WELSH CORGI PEMBROKE","image":"http://www.fci.be/Nomenclature/Illustrations/039g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":35,"name":"IRISH SOFT COATED WHEATEN TERRIER","image":null,"country":"IRELAND","section":"Large and medium sized Terriers"},
{"id":36,"name":"YUGOSLAVIAN SHEPHERD DOG - SHARPLANINA","image":" SERBIA","country":"MACEDONIA","section":"Molossian type"},
{"id":37,"name":"J\u00c4MTHUND","image":"http://www.fci.be/Nomenclature/Illustrations/042g05.jpg","country":"SWEDEN","section":"Nordic Hunting Dogs"},
{"id":38,"name":"BASENJI","image":null,"country":"CENTRAL AFRICA","section":"Primitive type"},
{"id":39,"name":"BERGER DE BEAUCE","image":null,"country":"FRANCE","section":"Sheepdogs"},
{"id":40,"name":"BERNESE MOUNTAIN DOG","image":"http://www.fci.be/Nomenclature/Illustrations/045g02.jpg","country":"SWITZERLAND","section":"Swiss Mountain- and Cattledogs"},
{"id":41,"name":"APPENZELL CATTLE DOG","image":null,"country":"SWITZERLAND","section":"Swiss Mountain- and Cattledogs"},
{"id":42,"name":"ENTLEBUCH CATTLE DOG","image":"http://www.fci.be/Nomenclature/Illustrations/047g02.jpg","country":"SWITZERLAND","section":"Swiss Mountain- and Cattledogs"},
{"id":43,"name":"KARELIAN BEAR DOG","image":"http://www.fci.be/Nomenclature/Illustrations/048g05-1.jpg","country":"FINLAND","section":"Nordic Hunting Dogs"},
{"id":44,"name":"FINNISH SPITZ","image":"http://www.fci.be/Nomenclature/Illustrations/049g05-1.jpg","country":"FINLAND","section":"Nordic Hunting Dogs"},
{"id":45,"name":"NEWFOUNDLAND","image":null,"country":"CANADA","section":"Molossian type"},
{"id":46,"name":"FINNISH HOUND","image":null,"country":"FINLAND","section":"Scent hounds"},
{"id":47,"name":"POLISH HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/052g06.jpg","country":"POLAND","section":"Scent hounds"},
{"id":48,"name":"KOMONDOR","image":"http://www.fci.be/Nomenclature/Illustrations/053g01.jpg","country":"HUNGARY","section":"Sheepdogs"},
{"id":49,"name":"KUVASZ","image":"http://www.fci.be/Nomenclature/Illustrations/054g01.jpg","country":"HUNGARY","section":"Sheepdogs"},
{"id":50,"name":"PULI","image":"http://www.fci.be/Nomenclature/Illustrations/055g01.jpg","country":"HUNGARY","section":"Sheepdogs"},
{"id":51,"name":"PUMI","image":"http://www.fci.be/Nomenclature/Illustrations/056g01.jpg","country":"HUNGARY","section":"Sheepdogs"},
{"id":52,"name":"HUNGARIAN SHORT-HAIRED POINTER (VIZSLA)","image":"http://www.fci.be/Nomenclature/Illustrations/057g07.jpg","country":"HUNGARY","section":"Continental Pointing Dogs"},
{"id":53,"name":"GREAT SWISS MOUNTAIN DOG","image":"http://www.fci.be/Nomenclature/Illustrations/058g02.jpg","country":"SWITZERLAND","section":"Swiss Mountain- and Cattledogs"},
{"id":54,"name":"SWISS HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/059g06-1.jpg","country":"SWITZERLAND","section":"Scent hounds"},
{"id":55,"name":"SMALL SWISS HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/060g06-1.jpg","country":"SWITZERLAND","section":"Scent hounds"},
{"id":56,"name":"ST. BERNARD","image":"http://www.fci.be/Nomenclature/Illustrations/061g02-1.jpg","country":"SWITZERLAND","section":"Molossian type"},
{"id":57,"name":"COARSE-HAIRED STYRIAN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/062g06.jpg","country":"AUSTRIA","section":"Scent hounds"},
{"id":58,"name":"AUSTRIAN BLACK AND TAN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/063g06.jpg","country":"AUSTRIA","section":"Scent hounds"},
{"id":59,"name":"AUSTRIAN  PINSCHER","image":null,"country":"AUSTRIA","section":"Pinscher and Schnauzer type"},
{"id":60,"name":"MALTESE","image":null,"country":"CENTRAL MEDITERRANEAN BASIN","section":"Bichons and related breeds"},
{"id":61,"name":"FAWN BRITTANY GRIFFON","image":"http://www.fci.be/Nomenclature/Illustrations/066g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":62,"name":"PETIT BASSET GRIFFON VENDEEN","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":63,"name":"TYROLEAN HOUND","image":null,"country":"AUSTRIA","section":"Scent hounds"},
{"id":64,"name":"LAKELAND TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/070g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":65,"name":"MANCHESTER TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/071g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":66,"name":"NORWICH TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/072g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":67,"name":"SCOTTISH TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/073g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":68,"name":"SEALYHAM TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/074g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":69,"name":"SKYE TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/075g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":70,"name":"STAFFORDSHIRE BULL TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/076g03.jpg","country":"GREAT BRITAIN","section":"Bull type Terriers"},
{"id":71,"name":"CONTINENTAL TOY SPANIEL","image":" FRANCE","country":"BELGIUM","section":"Continental Toy Spaniel and Russian Toy"},
{"id":72,"name":"WELSH TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/078g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":73,"name":"GRIFFON BRUXELLOIS","image":"http://www.fci.be/Nomenclature/Illustrations/080g09-1.jpg","country":"BELGIUM","section":"Small Belgian Dogs"},
{"id":74,"name":"GRIFFON BELGE","image":null,"country":"BELGIUM","section":"Small Belgian Dogs"},
{"id":75,"name":"PETIT BRABAN\u00c7ON","image":null,"country":"BELGIUM","section":"Small Belgian Dogs"},
{"id":76,"name":"SCHIPPERKE","image":null,"country":"BELGIUM","section":"Sheepdogs"},
{"id":77,"name":"BLOODHOUND","image":null,"country":"BELGIUM","section":"Scent hounds"},
{"id":78,"name":"WEST HIGHLAND WHITE TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/085g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":79,"name":"YORKSHIRE TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/086g03.jpg","country":"GREAT BRITAIN","section":"Toy Terriers"},
{"id":80,"name":"CATALAN SHEEPDOG","image":null,"country":"SPAIN","section":"Sheepdogs"},
{"id":81,"name":"SHETLAND SHEEPDOG","image":"http://www.fci.be/Nomenclature/Illustrations/088g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":82,"name":"IBIZAN PODENCO","image":null,"country":"SPAIN","section":"Primitive type - Hunting Dogs"},
{"id":83,"name":"BURGOS POINTING DOG","image":null,"country":"SPAIN","section":"Continental Pointing Dogs"},
{"id":84,"name":"SPANISH MASTIFF","image":null,"country":"SPAIN","section":"Molossian type"},
{"id":85,"name":"PYRENEAN MASTIFF","image":null,"country":"SPAIN","section":"Molossian type"},
{"id":86,"name":"PORTUGUESE SHEEPDOG","image":"http://www.fci.be/Nomenclature/Illustrations/093g01.jpg","country":"PORTUGAL","section":"Sheepdogs"},
{"id":87,"name":"PORTUGUESE WARREN HOUND-PORTUGUESE PODENGO","image":"http://www.fci.be/Nomenclature/Illustrations/094g05-1.jpg","country":"PORTUGAL","section":"Primitive type - Hunting Dogs"},
{"id":88,"name":"BRITTANY SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/095g07.jpg","country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":89,"name":"RAFEIRO OF ALENTEJO","image":"http://www.fci.be/Nomenclature/Illustrations/096g02.jpg","country":"PORTUGAL","section":"Molossian type"},
{"id":90,"name":"GERMAN SPITZ","image":"http://www.fci.be/Nomenclature/Illustrations/097g05-1.jpg","country":"GERMANY","section":"European Spitz"},
{"id":91,"name":"GERMAN WIRE- HAIRED POINTING DOG","image":"http://www.fci.be/Nomenclature/Illustrations/098g07.jpg","country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":92,"name":"WEIMARANER","image":null,"country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":93,"name":"WESTPHALIAN DACHSBRACKE","image":null,"country":"GERMANY","section":"Scent hounds"},
{"id":94,"name":"FRENCH BULLDOG","image":"http://www.fci.be/Nomenclature/Illustrations/101g09.jpg","country":"FRANCE","section":"Small Molossian type Dogs"},
{"id":95,"name":"KLEINER M\u00dcNSTERL\u00c4NDER","image":null,"country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":96,"name":"GERMAN HUNTING TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/103g03-1.jpg","country":"GERMANY","section":"Large and medium sized Terriers"},
{"id":97,"name":"GERMAN SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/104g08.jpg","country":"GERMANY","section":"Flushing Dogs"},
{"id":98,"name":"FRENCH WATER DOG","image":"http://www.fci.be/Nomenclature/Illustrations/105g08.jpg","country":"FRANCE","section":"Water Dogs"},
{"id":99,"name":"BLUE PICARDY SPANIEL","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":100,"name":"WIRE-HAIRED POINTING GRIFFON KORTHALS","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":101,"name":"PICARDY SPANIEL","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":102,"name":"CLUMBER SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/109g08.jpg","country":"GREAT BRITAIN","section":"Flushing Dogs"},
{"id":103,"name":"CURLY COATED RETRIEVER","image":"http://www.fci.be/Nomenclature/Illustrations/110g08.jpg","country":"GREAT BRITAIN","section":"Retrievers"},
{"id":104,"name":"GOLDEN RETRIEVER","image":null,"country":"GREAT BRITAIN","section":"Retrievers"},
{"id":105,"name":"BRIARD","image":"http://www.fci.be/Nomenclature/Illustrations/113g01.jpg","country":"FRANCE","section":"Sheepdogs"},
{"id":106,"name":"PONT-AUDEMER SPANIEL","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":107,"name":"SAINT GERMAIN POINTER","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":108,"name":"DOGUE DE BORDEAUX","image":"http://www.fci.be/Nomenclature/Illustrations/116g02.jpg","country":"FRANCE","section":"Molossian type"},
{"id":109,"name":"DEUTSCH LANGHAAR","image":"http://www.fci.be/Nomenclature/Illustrations/117g07.jpg","country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":110,"name":"LARGE MUNSTERLANDER","image":"http://www.fci.be/Nomenclature/Illustrations/118g07.jpg","country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":111,"name":"GERMAN SHORT- HAIRED POINTING DOG","image":"http://www.fci.be/Nomenclature/Illustrations/119g07.jpg","country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":112,"name":"IRISH RED SETTER","image":null,"country":"IRELAND","section":"British and Irish Pointers and Setters"},
{"id":113,"name":"FLAT COATED RETRIEVER","image":"http://www.fci.be/Nomenclature/Illustrations/121g08.jpg","country":"GREAT BRITAIN","section":"Retrievers"},
{"id":114,"name":"LABRADOR RETRIEVER","image":"http://www.fci.be/Nomenclature/Illustrations/122g08.jpg","country":"GREAT BRITAIN","section":"Retrievers"},
{"id":115,"name":"FIELD SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/123g08.jpg","country":"GREAT BRITAIN","section":"Flushing Dogs"},
{"id":116,"name":"IRISH WATER SPANIEL","image":null,"country":"IRELAND","section":"Water Dogs"},
{"id":117,"name":"ENGLISH SPRINGER SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/125g08.jpg","country":"GREAT BRITAIN","section":"Flushing Dogs"},
{"id":118,"name":"WELSH SPRINGER SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/126g08.jpg","country":"GREAT BRITAIN","section":"Flushing Dogs"},
{"id":119,"name":"SUSSEX SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/127g08.jpg","country":"GREAT BRITAIN","section":"Flushing Dogs"},
{"id":120,"name":"KING CHARLES SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/128g09.jpg","country":"GREAT BRITAIN","section":"English Toy Spaniels"},
{"id":121,"name":"SM\u00c5LANDSST\u00d6VARE","image":"http://www.fci.be/Nomenclature/Illustrations/129g06.jpg","country":"SWEDEN","section":"Scent hounds"},
{"id":122,"name":"DREVER","image":"http://www.fci.be/Nomenclature/Illustrations/130g06.jpg","country":"SWEDEN","section":"Scent hounds"},
{"id":123,"name":"SCHILLERST\u00d6VARE","image":"http://www.fci.be/Nomenclature/Illustrations/131g06.jpg","country":"SWEDEN","section":"Scent hounds"},
{"id":124,"name":"HAMILTONST\u00d6VARE","image":"http://www.fci.be/Nomenclature/Illustrations/132g06.jpg","country":"SWEDEN","section":"Scent hounds"},
{"id":125,"name":"FRENCH POINTING DOG - GASCOGNE TYPE","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":126,"name":"FRENCH POINTING DOG - PYRENEAN TYPE","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":127,"name":"SWEDISH LAPPHUND","image":null,"country":"SWEDEN","section":"Nordic Watchdogs and Herders"},
{"id":128,"name":"CAVALIER KING CHARLES SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/136g09.jpg","country":"GREAT BRITAIN","section":"English Toy Spaniels"},
{"id":129,"name":"PYRENEAN MOUNTAIN DOG","image":"http://www.fci.be/Nomenclature/Illustrations/137g02.jpg","country":"FRANCE","section":"Molossian type"},
{"id":130,"name":"PYRENEAN SHEEPDOG - SMOOTH FACED","image":"http://www.fci.be/Nomenclature/Illustrations/138g01.jpg","country":"FRANCE","section":"Sheepdogs"},
{"id":131,"name":"IRISH TERRIER","image":null,"country":"IRELAND","section":"Large and medium sized Terriers"},
{"id":132,"name":"BOSTON TERRIER","image":null,"country":"UNITED STATES OF AMERICA","section":"Small Molossian type Dogs"},
{"id":133,"name":"LONG-HAIRED PYRENEAN SHEEPDOG","image":"http://www.fci.be/Nomenclature/Illustrations/141g01.jpg","country":"FRANCE","section":"Sheepdogs"},
{"id":134,"name":"SLOVAKIAN CHUVACH","image":null,"country":"SLOVAKIA","section":"Sheepdogs"},
{"id":135,"name":"DOBERMANN","image":"http://www.fci.be/Nomenclature/Illustrations/143g02.jpg","country":"GERMANY","section":"Pinscher and Schnauzer type"},
{"id":136,"name":"BOXER","image":"http://www.fci.be/Nomenclature/Illustrations/144g02.jpg","country":"GERMANY","section":"Molossian type"},
{"id":137,"name":"LEONBERGER","image":null,"country":"GERMANY","section":"Molossian type"},
{"id":138,"name":"RHODESIAN RIDGEBACK","image":null,"country":"SOUTH AFRICA","section":"Related breeds"},
{"id":139,"name":"ROTTWEILER","image":null,"country":"GERMANY","section":"Molossian type"},
{"id":140,"name":"DACHSHUND","image":"http://www.fci.be/Nomenclature/Illustrations/148g04-1.jpg","country":"GERMANY","section":"None"},
{"id":141,"name":"BULLDOG","image":"http://www.fci.be/Nomenclature/Illustrations/149g02.jpg","country":"GREAT BRITAIN","section":"Molossian type"},
{"id":142,"name":"SERBIAN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/150g06.jpg","country":"SERBIA","section":"Scent hounds"},
{"id":143,"name":"ISTRIAN SHORT-HAIRED HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/151g06.jpg","country":"CROATIA","section":"Scent hounds"},
{"id":144,"name":"ISTRIAN WIRE-HAIRED HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/152g06.jpg","country":"CROATIA","section":"Scent hounds"},
{"id":145,"name":"DALMATIAN","image":"http://www.fci.be/Nomenclature/Illustrations/153g06.jpg","country":"CROATIA","section":"Related breeds"},
{"id":146,"name":"POSAVATZ HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/154g06.jpg","country":"CROATIA","section":"Scent hounds"},
{"id":147,"name":"BOSNIAN BROKEN-HAIRED HOUND - CALLED BARAK","image":"http://www.fci.be/Nomenclature/Illustrations/155g06.jpg","country":"BOSNIA AND HERZEGOVINA","section":"Scent hounds"},
{"id":148,"name":"COLLIE ROUGH","image":"http://www.fci.be/Nomenclature/Illustrations/156g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":149,"name":"BULLMASTIFF","image":null,"country":"GREAT BRITAIN","section":"Molossian type"},
{"id":150,"name":"GREYHOUND","image":"http://www.fci.be/Nomenclature/Illustrations/158g10.jpg","country":"GREAT BRITAIN","section":"Short-haired Sighthounds"},
{"id":151,"name":"ENGLISH FOXHOUND","image":null,"country":"GREAT BRITAIN","section":"Scent hounds"},
{"id":152,"name":"IRISH WOLFHOUND","image":null,"country":"IRELAND","section":"Rough-haired Sighthounds"},
{"id":153,"name":"BEAGLE","image":"http://www.fci.be/Nomenclature/Illustrations/161g06.jpg","country":"GREAT BRITAIN","section":"Scent hounds"},
{"id":154,"name":"WHIPPET","image":"http://www.fci.be/Nomenclature/Illustrations/162g10.jpg","country":"GREAT BRITAIN","section":"Short-haired Sighthounds"},
{"id":155,"name":"BASSET HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/163g06.jpg","country":"GREAT BRITAIN","section":"Scent hounds"},
{"id":156,"name":"DEERHOUND","image":"http://www.fci.be/Nomenclature/Illustrations/164g10.jpg","country":"GREAT BRITAIN","section":"Rough-haired Sighthounds"},
{"id":157,"name":"ITALIAN SPINONE","image":null,"country":"ITALY","section":"Continental Pointing Dogs"},
{"id":158,"name":"GERMAN SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/166g01-1.jpg","country":"GERMANY","section":"Sheepdogs"},
{"id":159,"name":"AMERICAN COCKER SPANIEL","image":null,"country":"UNITED STATES OF AMERICA","section":"Flushing Dogs"},
{"id":160,"name":"DANDIE DINMONT TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/168g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":161,"name":"FOX TERRIER (WIRE)","image":"http://www.fci.be/Nomenclature/Illustrations/169g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":162,"name":"CASTRO LABOREIRO DOG","image":"http://www.fci.be/Nomenclature/Illustrations/170g02.jpg","country":"PORTUGAL","section":"Molossian type"},
{"id":163,"name":"BOUVIER DES ARDENNES","image":null,"country":"BELGIUM","section":"Cattledogs (except Swiss Cattledogs)"},
{"id":164,"name":"POODLE","image":"http://www.fci.be/Nomenclature/Illustrations/172g09.jpg","country":"FRANCE","section":"Poodle"},
{"id":165,"name":"ESTRELA MOUNTAIN DOG","image":"http://www.fci.be/Nomenclature/Illustrations/173g02.jpg","country":"PORTUGAL","section":"Molossian type"},
{"id":166,"name":"FRENCH SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/175g07.jpg","country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":167,"name":"PICARDY SHEEPDOG","image":null,"country":"FRANCE","section":"Sheepdogs"},
{"id":168,"name":"ARIEGE POINTING DOG","image":null,"country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":169,"name":"BOURBONNAIS POINTING DOG","image":"http://www.fci.be/Nomenclature/Illustrations/179g07.jpg","country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":170,"name":"AUVERGNE POINTER","image":"http://www.fci.be/Nomenclature/Illustrations/180g07.jpg","country":"FRANCE","section":"Continental Pointing Dogs"},
{"id":171,"name":"GIANT SCHNAUZER","image":"http://www.fci.be/Nomenclature/Illustrations/181g02.jpg","country":"GERMANY","section":"Pinscher and Schnauzer type"},
{"id":172,"name":"SCHNAUZER","image":"http://www.fci.be/Nomenclature/Illustrations/182g02.jpg","country":"GERMANY","section":"Pinscher and Schnauzer type"},
{"id":173,"name":"MINIATURE SCHNAUZER","image":"http://www.fci.be/Nomenclature/Illustrations/183g02.jpg","country":"GERMANY","section":"Pinscher and Schnauzer type"},
{"id":174,"name":"GERMAN PINSCHER","image":"http://www.fci.be/Nomenclature/Illustrations/184g02.jpg","country":"GERMANY","section":"Pinscher and Schnauzer type"},
{"id":175,"name":"MINIATURE PINSCHER","image":"http://www.fci.be/Nomenclature/Illustrations/185g02.jpg","country":"GERMANY","section":"Pinscher and Schnauzer type"},
{"id":176,"name":"AFFENPINSCHER","image":"http://www.fci.be/Nomenclature/Illustrations/186g02.jpg","country":"GERMANY","section":"Pinscher and Schnauzer type"},
{"id":177,"name":"PORTUGUESE POINTING DOG","image":"http://www.fci.be/Nomenclature/Illustrations/187g07.jpg","country":"PORTUGAL","section":"Continental Pointing Dogs"},
{"id":178,"name":"SLOUGHI","image":null,"country":"MOROCCO","section":"Short-haired Sighthounds"},
{"id":179,"name":"FINNISH LAPPHUND","image":null,"country":"FINLAND","section":"Nordic Watchdogs and Herders"},
{"id":180,"name":"HOVAWART","image":null,"country":"GERMANY","section":"Molossian type"},
{"id":181,"name":"BOUVIER DES FLANDRES","image":" FRANCE","country":"BELGIUM","section":"Cattledogs (except Swiss Cattledogs)"},
{"id":182,"name":"KROMFOHRL\u00c4NDER","image":"http://www.fci.be/Nomenclature/Illustrations/192g09.jpg","country":"GERMANY","section":"Kromfohrl\u00e4nder"},
{"id":183,"name":"BORZOI - RUSSIAN HUNTING SIGHTHOUND","image":"http://www.fci.be/Nomenclature/Illustrations/193g10.jpg","country":"RUSSIA","section":"Long-haired or fringed Sighthounds"},
{"id":184,"name":"BERGAMASCO SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/194g01-1.jpg","country":"ITALY","section":"Sheepdogs"},
{"id":185,"name":"ITALIAN VOLPINO","image":null,"country":"ITALY","section":"European Spitz"},
{"id":186,"name":"BOLOGNESE","image":null,"country":"ITALY","section":"Bichons and related breeds"},
{"id":187,"name":"NEAPOLITAN MASTIFF","image":null,"country":"ITALY","section":"Molossian type"},
{"id":188,"name":"ITALIAN ROUGH-HAIRED SEGUGIO","image":"http://www.fci.be/Nomenclature/Illustrations/198g06.jpg","country":"ITALY","section":"Scent hounds"},
{"id":189,"name":"CIRNECO DELL'ETNA","image":null,"country":"ITALY","section":"Primitive type - Hunting Dogs"},
{"id":190,"name":"ITALIAN GREYHOUND","image":null,"country":"ITALY","section":"Short-haired Sighthounds"},
{"id":191,"name":"MAREMMA AND THE ABRUZZES SHEEPDOG","image":null,"country":"ITALY","section":"Sheepdogs"},
{"id":192,"name":"ITALIAN POINTING DOG","image":null,"country":"ITALY","section":"Continental Pointing Dogs"},
{"id":193,"name":"NORWEGIAN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/203g06.jpg","country":"NORWAY","section":"Scent hounds"},
{"id":194,"name":"SPANISH HOUND","image":null,"country":"SPAIN","section":"Scent hounds"},
{"id":195,"name":"CHOW CHOW","image":"http://www.fci.be/Nomenclature/Illustrations/205g05.jpg","country":"CHINA","section":"Asian Spitz and related breeds"},
{"id":196,"name":"JAPANESE CHIN","image":"http://www.fci.be/Nomenclature/Illustrations/206g09.jpg","country":"JAPAN","section":"Japan Chin and Pekingese"},
{"id":197,"name":"PEKINGESE","image":"http://www.fci.be/Nomenclature/Illustrations/207g09.jpg","country":"CHINA","section":"Japan Chin and Pekingese"},
{"id":198,"name":"SHIH TZU","image":"http://www.fci.be/Nomenclature/Illustrations/208g09.jpg","country":"Tibet (China)","section":"Tibetan breeds"},
{"id":199,"name":"TIBETAN TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/209g09.jpg","country":"Tibet (China)","section":"Tibetan breeds"},
{"id":200,"name":"SAMOYED","image":" SIBERIA","country":"NORTHERN RUSSIA","section":"Nordic Sledge Dogs"},
{"id":201,"name":"HANOVERIAN SCENTHOUND","image":"http://www.fci.be/Nomenclature/Illustrations/213g06-1.jpg","country":"GERMANY","section":"Leash (scent) Hounds"},
{"id":202,"name":"HELLENIC HOUND","image":null,"country":"GREECE","section":"Scent hounds"},
{"id":203,"name":"BICHON FRISE","image":" FRANCE","country":"BELGIUM","section":"Bichons and related breeds"},
{"id":204,"name":"PUDELPOINTER","image":null,"country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":205,"name":"BAVARIAN MOUNTAIN SCENT HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/217g06.jpg","country":"GERMANY","section":"Leash (scent) Hounds"},
{"id":206,"name":"CHIHUAHUA","image":"http://www.fci.be/Nomenclature/Illustrations/218g09-1.jpg","country":"MEXICO","section":"Chihuahueno"},
{"id":207,"name":"FRENCH TRICOLOUR HOUND","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":208,"name":"FRENCH WHITE & BLACK HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/220g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":209,"name":"FRISIAN WATER DOG","image":null,"country":"THE NETHERLANDS","section":"Water Dogs"},
{"id":210,"name":"STABIJHOUN","image":"http://www.fci.be/Nomenclature/Illustrations/222g07-1.jpg","country":"THE NETHERLANDS","section":"Continental Pointing Dogs"},
{"id":211,"name":"DUTCH SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/223g01-1.jpg","country":"THE NETHERLANDS","section":"Sheepdogs"},
{"id":212,"name":"DRENTSCHE PARTRIDGE DOG","image":null,"country":"THE NETHERLANDS","section":"Continental Pointing Dogs"},
{"id":213,"name":"FILA BRASILEIRO","image":"http://www.fci.be/Nomenclature/Illustrations/225g02.jpg","country":"BRAZIL","section":"Molossian type"},
{"id":214,"name":"LANDSEER (EUROPEAN CONTINENTAL TYPE)","image":" SWITZERLAND","country":"GERMANY","section":"Molossian type"},
{"id":215,"name":"LHASA APSO","image":"http://www.fci.be/Nomenclature/Illustrations/227g09.jpg","country":"Tibet (China)","section":"Tibetan breeds"},
{"id":216,"name":"AFGHAN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/228g10.jpg","country":"AFGHANISTAN","section":"Long-haired or fringed Sighthounds"},
{"id":217,"name":"SERBIAN TRICOLOUR HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/229g06.jpg","country":"SERBIA","section":"Scent hounds"},
{"id":218,"name":"TIBETAN MASTIFF","image":null,"country":"Tibet (China)","section":"Molossian type"},
{"id":219,"name":"TIBETAN SPANIEL","image":"http://www.fci.be/Nomenclature/Illustrations/231g09.jpg","country":"Tibet (China)","section":"Tibetan breeds"},
{"id":220,"name":"DEUTSCH STICHELHAAR","image":"http://www.fci.be/Nomenclature/Illustrations/232g07.jpg","country":"GERMANY","section":"Continental Pointing Dogs"},
{"id":221,"name":"LITTLE LION DOG","image":"http://www.fci.be/Nomenclature/Illustrations/233g09.jpg","country":"FRANCE","section":"Bichons and related breeds"},
{"id":222,"name":"XOLOITZCUINTLE","image":"http://www.fci.be/Nomenclature/Illustrations/234g05-1.jpg","country":"MEXICO","section":"Primitive type"},
{"id":223,"name":"GREAT DANE","image":"http://www.fci.be/Nomenclature/Illustrations/235g02.jpg","country":"GERMANY","section":"Molossian type"},
{"id":224,"name":"AUSTRALIAN SILKY TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/236g03.jpg","country":"AUSTRALIA","section":"Toy Terriers"},
{"id":225,"name":"NORWEGIAN BUHUND","image":"http://www.fci.be/Nomenclature/Illustrations/237g05.jpg","country":"NORWAY","section":"Nordic Watchdogs and Herders"},
{"id":226,"name":"MUDI","image":"http://www.fci.be/Nomenclature/Illustrations/238g01.jpg","country":"HUNGARY","section":"Sheepdogs"},
{"id":227,"name":"HUNGARIAN WIRE-HAIRED POINTER","image":"http://www.fci.be/Nomenclature/Illustrations/239g07.jpg","country":"HUNGARY","section":"Continental Pointing Dogs"},
{"id":228,"name":"HUNGARIAN GREYHOUND","image":"http://www.fci.be/Nomenclature/Illustrations/240g10.jpg","country":"HUNGARY","section":"Short-haired Sighthounds"},
{"id":229,"name":"HUNGARIAN HOUND - TRANSYLVANIAN SCENT HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/241g06.jpg","country":"HUNGARY","section":"Scent hounds"},
{"id":230,"name":"NORWEGIAN ELKHOUND GREY","image":"http://www.fci.be/Nomenclature/Illustrations/242g05.jpg","country":"NORWAY","section":"Nordic Hunting Dogs"},
{"id":231,"name":"ALASKAN MALAMUTE","image":null,"country":"UNITED STATES OF AMERICA","section":"Nordic Sledge Dogs"},
{"id":232,"name":"SLOVAKIAN HOUND","image":null,"country":"SLOVAKIA","section":"Scent hounds"},
{"id":233,"name":"BOHEMIAN WIRE-HAIRED POINTING GRIFFON","image":null,"country":"CZECH REPUBLIC","section":"Continental Pointing Dogs"},
{"id":234,"name":"CESKY TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/246g03.jpg","country":"CZECH REPUBLIC","section":"Small sized Terriers"},
{"id":235,"name":"ATLAS MOUNTAIN DOG (AIDI)","image":null,"country":"MOROCCO","section":"Molossian type"},
{"id":236,"name":"PHARAOH HOUND","image":null,"country":"MALTA","section":"Primitive type"},
{"id":237,"name":"MAJORCA MASTIFF","image":null,"country":"SPAIN","section":"Molossian type"},
{"id":238,"name":"HAVANESE","image":null,"country":"WESTERN MEDITERRANEAN BASIN","section":"Bichons and related breeds"},
{"id":239,"name":"POLISH LOWLAND SHEEPDOG","image":"http://www.fci.be/Nomenclature/Illustrations/251g01.jpg","country":"POLAND","section":"Sheepdogs"},
{"id":240,"name":"TATRA SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/252g01.jpg","country":"POLAND","section":"Sheepdogs"},
{"id":241,"name":"PUG","image":"http://www.fci.be/Nomenclature/Illustrations/253g09.jpg","country":"CHINA","section":"Small Molossian type Dogs"},
{"id":242,"name":"ALPINE DACHSBRACKE","image":null,"country":"AUSTRIA","section":"Leash (scent) Hounds"},
{"id":243,"name":"AKITA","image":"http://www.fci.be/Nomenclature/Illustrations/255g05.jpg","country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":244,"name":"SHIBA","image":"http://www.fci.be/Nomenclature/Illustrations/257g05.jpg","country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":245,"name":"JAPANESE TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/259g03.jpg","country":"JAPAN","section":"Small sized Terriers"},
{"id":246,"name":"TOSA","image":"http://www.fci.be/Nomenclature/Illustrations/260g02.jpg","country":"JAPAN","section":"Molossian type"},
{"id":247,"name":"HOKKAIDO","image":"http://www.fci.be/Nomenclature/Illustrations/261g05.jpg","country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":248,"name":"JAPANESE SPITZ","image":"http://www.fci.be/Nomenclature/Illustrations/262g05.jpg","country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":249,"name":"CHESAPEAKE BAY RETRIEVER","image":null,"country":"UNITED STATES OF AMERICA","section":"Retrievers"},
{"id":250,"name":"MASTIFF","image":null,"country":"GREAT BRITAIN","section":"Molossian type"},
{"id":251,"name":"NORWEGIAN LUNDEHUND","image":"http://www.fci.be/Nomenclature/Illustrations/265g05.jpg","country":"NORWAY","section":"Nordic Hunting Dogs"},
{"id":252,"name":"HYGEN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/266g06.jpg","country":"NORWAY","section":"Scent hounds"},
{"id":253,"name":"HALDEN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/267g06.jpg","country":"NORWAY","section":"Scent hounds"},
{"id":254,"name":"NORWEGIAN ELKHOUND BLACK","image":"http://www.fci.be/Nomenclature/Illustrations/268g05.jpg","country":"NORWAY","section":"Nordic Hunting Dogs"},
{"id":255,"name":"SALUKI","image":null,"country":"MIDDLE EAST","section":"Long-haired or fringed Sighthounds"},
{"id":256,"name":"SIBERIAN HUSKY","image":null,"country":"UNITED STATES OF AMERICA","section":"Nordic Sledge Dogs"},
{"id":257,"name":"BEARDED COLLIE","image":"http://www.fci.be/Nomenclature/Illustrations/271g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":258,"name":"NORFOLK TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/272g03.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":259,"name":"CANAAN DOG","image":null,"country":"ISRAEL","section":"Primitive type"},
{"id":260,"name":"GREENLAND DOG","image":"http://www.fci.be/Nomenclature/Illustrations/274g05.jpg","country":"GREENLAND","section":"Nordic Sledge Dogs"},
{"id":261,"name":"NORRBOTTENSPITZ","image":"http://www.fci.be/Nomenclature/Illustrations/276g05.jpg","country":"SWEDEN","section":"Nordic Hunting Dogs"},
{"id":262,"name":"CROATIAN SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/277g01.jpg","country":"CROATIA","section":"Sheepdogs"},
{"id":263,"name":"KARST SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/278g02.jpg","country":"SLOVENIA","section":"Molossian type"},
{"id":264,"name":"MONTENEGRIN MOUNTAIN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/279g06.jpg","country":"MONTENEGRO","section":"Scent hounds"},
{"id":265,"name":"OLD DANISH POINTING DOG","image":null,"country":"DENMARK","section":"Continental Pointing Dogs"},
{"id":266,"name":"GRAND GRIFFON VENDEEN","image":"http://www.fci.be/Nomenclature/Illustrations/282g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":267,"name":"COTON DE TULEAR","image":null,"country":"MADAGASCAR","section":"Bichons and related breeds"},
{"id":268,"name":"LAPPONIAN HERDER","image":null,"country":"FINLAND","section":"Nordic Watchdogs and Herders"},
{"id":269,"name":"SPANISH GREYHOUND","image":null,"country":"SPAIN","section":"Short-haired Sighthounds"},
{"id":270,"name":"AMERICAN STAFFORDSHIRE TERRIER","image":null,"country":"UNITED STATES OF AMERICA","section":"Bull type Terriers"},
{"id":271,"name":"AUSTRALIAN CATTLE DOG","image":"http://www.fci.be/Nomenclature/Illustrations/287g01.jpg","country":"AUSTRALIA","section":"Cattledogs (except Swiss Cattledogs)"},
{"id":272,"name":"CHINESE CRESTED DOG","image":"http://www.fci.be/Nomenclature/Illustrations/288g09.jpg","country":"CHINA","section":"Hairless Dogs"},
{"id":273,"name":"ICELANDIC SHEEPDOG","image":"http://www.fci.be/Nomenclature/Illustrations/289g05.jpg","country":"ICELAND","section":"Nordic Watchdogs and Herders"},
{"id":274,"name":"BEAGLE HARRIER","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":275,"name":"EURASIAN","image":"http://www.fci.be/Nomenclature/Illustrations/291g05.jpg","country":"GERMANY","section":"Asian Spitz and related breeds"},
{"id":276,"name":"DOGO ARGENTINO","image":"http://www.fci.be/Nomenclature/Illustrations/292g02.jpg","country":"ARGENTINA","section":"Molossian type"},
{"id":277,"name":"AUSTRALIAN KELPIE","image":"http://www.fci.be/Nomenclature/Illustrations/293g01.jpg","country":"AUSTRALIA","section":"Sheepdogs"},
{"id":278,"name":"OTTERHOUND","image":"http://www.fci.be/Nomenclature/Illustrations/294g06.jpg","country":"GREAT BRITAIN","section":"Scent hounds"},
{"id":279,"name":"HARRIER","image":null,"country":"GREAT BRITAIN","section":"Scent hounds"},
{"id":280,"name":"COLLIE SMOOTH","image":"http://www.fci.be/Nomenclature/Illustrations/296g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":281,"name":"BORDER COLLIE","image":"http://www.fci.be/Nomenclature/Illustrations/297g01.jpg","country":"GREAT BRITAIN","section":"Sheepdogs"},
{"id":282,"name":"ROMAGNA WATER DOG","image":"http://www.fci.be/Nomenclature/Illustrations/298g08-01.jpg","country":"ITALY","section":"Water Dogs"},
{"id":283,"name":"GERMAN HOUND","image":null,"country":"GERMANY","section":"Scent hounds"},
{"id":284,"name":"BLACK AND TAN COONHOUND","image":"http://www.fci.be/Nomenclature/Illustrations/300g06.jpg","country":"UNITED STATES OF AMERICA","section":"Scent hounds"},
{"id":285,"name":"AMERICAN WATER SPANIEL","image":null,"country":"UNITED STATES OF AMERICA","section":"Water Dogs"},
{"id":286,"name":"IRISH GLEN OF IMAAL TERRIER","image":null,"country":"IRELAND","section":"Large and medium sized Terriers"},
{"id":287,"name":"AMERICAN FOXHOUND","image":null,"country":"UNITED STATES OF AMERICA","section":"Scent hounds"},
{"id":288,"name":"RUSSIAN-EUROPEAN LAIKA","image":null,"country":"RUSSIA","section":"Nordic Hunting Dogs"},
{"id":289,"name":"EAST SIBERIAN LAIKA","image":"http://www.fci.be/Nomenclature/Illustrations/305g05-1.jpg","country":"RUSSIA","section":"Nordic Hunting Dogs"},
{"id":290,"name":"WEST SIBERIAN LAIKA","image":null,"country":"RUSSIA","section":"Nordic Hunting Dogs"},
{"id":291,"name":"AZAWAKH","image":null,"country":"MALI","section":"Short-haired Sighthounds"},
{"id":292,"name":"DUTCH SMOUSHOND","image":null,"country":"THE NETHERLANDS","section":"Pinscher and Schnauzer type"},
{"id":293,"name":"SHAR PEI","image":null,"country":"CHINA","section":"Molossian type"},
{"id":294,"name":"PERUVIAN HAIRLESS DOG","image":"http://www.fci.be/Nomenclature/Illustrations/310g05.jpg","country":"PERU","section":"Primitive type"},
{"id":295,"name":"SAARLOOS WOLFHOND","image":null,"country":"THE NETHERLANDS","section":"Sheepdogs"},
{"id":296,"name":"NOVA SCOTIA DUCK TOLLING RETRIEVER","image":null,"country":"CANADA","section":"Retrievers"},
{"id":297,"name":"DUTCH SCHAPENDOES","image":"http://www.fci.be/Nomenclature/Illustrations/313g01.jpg","country":"THE NETHERLANDS","section":"Sheepdogs"},
{"id":298,"name":"NEDERLANDSE KOOIKERHONDJE","image":"http://www.fci.be/Nomenclature/Illustrations/314g08-1.jpg","country":"THE NETHERLANDS","section":"Flushing Dogs"},
{"id":299,"name":"BROHOLMER","image":"http://www.fci.be/Nomenclature/Illustrations/315g02.jpg","country":"DENMARK","section":"Molossian type"},
{"id":300,"name":"FRENCH WHITE AND ORANGE HOUND","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":301,"name":"KAI","image":"http://www.fci.be/Nomenclature/Illustrations/317g05.jpg","country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":302,"name":"KISHU","image":"http://www.fci.be/Nomenclature/Illustrations/318g05.jpg","country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":303,"name":"SHIKOKU","image":"http://www.fci.be/Nomenclature/Illustrations/319g05.jpg","country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":304,"name":"WIREHAIRED SLOVAKIAN POINTER","image":null,"country":"SLOVAKIA","section":"Continental Pointing Dogs"},
{"id":305,"name":"MAJORCA SHEPHERD DOG","image":null,"country":"SPAIN","section":"Sheepdogs"},
{"id":306,"name":"GREAT ANGLO-FRENCH TRICOLOUR HOUND","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":307,"name":"GREAT ANGLO-FRENCH WHITE AND BLACK HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/323g06.jpg","country":"FRANCE","section":"Scent hounds"},
{"id":308,"name":"GREAT ANGLO-FRENCH WHITE & ORANGE HOUND","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":309,"name":"MEDIUM-SIZED ANGLO-FRENCH HOUND","image":null,"country":"FRANCE","section":"Scent hounds"},
{"id":310,"name":"SOUTH RUSSIAN SHEPHERD DOG","image":null,"country":"RUSSIA","section":"Sheepdogs"},
{"id":311,"name":"RUSSIAN BLACK TERRIER","image":null,"country":"RUSSIA","section":"Pinscher and Schnauzer type"},
{"id":312,"name":"CAUCASIAN SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/328g02.jpg","country":"RUSSIA","section":"Molossian type"},
{"id":313,"name":"CANARIAN WARREN HOUND","image":"http://www.fci.be/Nomenclature/Illustrations/329g05.jpg","country":"SPAIN","section":"Primitive type - Hunting Dogs"},
{"id":314,"name":"IRISH RED AND WHITE SETTER","image":null,"country":"IRELAND","section":"British and Irish Pointers and Setters"},
{"id":315,"name":"ANATOLIAN SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/331g02.jpg","country":"ANATOLIA","section":"Molossian type"},
{"id":316,"name":"CZECHOSLOVAKIAN WOLFDOG","image":null,"country":"SLOVAKIA","section":"Sheepdogs"},
{"id":317,"name":"POLISH GREYHOUND","image":null,"country":"POLAND","section":"Short-haired Sighthounds"},
{"id":318,"name":"KOREA JINDO DOG","image":"http://www.fci.be/Nomenclature/Illustrations/334g05.jpg","country":"REPUBLIC OF KOREA","section":"Asian Spitz and related breeds"},
{"id":319,"name":"CENTRAL ASIA SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/335g02-1.jpg","country":"RUSSIA","section":"Molossian type"},
{"id":320,"name":"SPANISH WATER DOG","image":null,"country":"SPAIN","section":"Water Dogs"},
{"id":321,"name":"ITALIAN SHORT-HAIRED SEGUGIO","image":"http://www.fci.be/Nomenclature/Illustrations/337g06.jpg","country":"ITALY","section":"Scent hounds"},
{"id":322,"name":"THAI RIDGEBACK DOG","image":null,"country":"THAILAND","section":"Primitive type - Hunting Dogs"},
{"id":323,"name":"PARSON RUSSELL TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/339g03.jpg","country":"GREAT BRITAIN","section":"Large and medium sized Terriers"},
{"id":324,"name":"SAINT MIGUEL CATTLE DOG","image":null,"country":"PORTUGAL","section":"Molossian type"},
{"id":325,"name":"BRAZILIAN TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/341g03.jpg","country":"BRAZIL","section":"Large and medium sized Terriers"},
{"id":326,"name":"AUSTRALIAN SHEPHERD","image":null,"country":"UNITED STATES OF AMERICA","section":"Sheepdogs"},
{"id":327,"name":"ITALIAN CORSO DOG","image":"http://www.fci.be/Nomenclature/Illustrations/343g02.jpg","country":"ITALY","section":"Molossian type"},
{"id":328,"name":"AMERICAN AKITA","image":null,"country":"JAPAN","section":"Asian Spitz and related breeds"},
{"id":329,"name":"JACK RUSSELL TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/345g03-2.jpg","country":"GREAT BRITAIN","section":"Small sized Terriers"},
{"id":330,"name":"DOGO CANARIO","image":null,"country":"SPAIN","section":"Molossian type"},
{"id":331,"name":"WHITE SWISS SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/347g01-1.jpg","country":"SWITZERLAND","section":"Sheepdogs"},
{"id":332,"name":"TAIWAN DOG","image":null,"country":"TAIWAN","section":"Primitive type - Hunting Dogs"},
{"id":333,"name":"ROMANIAN MIORITIC SHEPHERD DOG","image":null,"country":"ROMANIA","section":"Sheepdogs"},
{"id":334,"name":"ROMANIAN CARPATHIAN SHEPHERD DOG","image":"http://www.fci.be/Nomenclature/Illustrations/350g01.jpg","country":"ROMANIA","section":"Sheepdogs"},
{"id":335,"name":"AUSTRALIAN STUMPY TAIL CATTLE DOG","image":null,"country":"AUSTRALIA","section":"Cattledogs (except Swiss Cattledogs)"},
{"id":336,"name":"RUSSIAN TOY","image":"http://www.fci.be/Nomenclature/Illustrations/352g09-1.jpg","country":"RUSSIA","section":"Continental Toy Spaniel and Russian Toy"},
{"id":337,"name":"CIMARR\u00d3N URUGUAYO","image":null,"country":"URUGUAY","section":"Molossian type"},
{"id":338,"name":"POLISH HUNTING DOG","image":null,"country":"POLAND","section":"Scent hounds"},
{"id":339,"name":"BOSNIAN AND HERZEGOVINIAN - CROATIAN SHEPHERD DOG","image":" CROATIA","country":"BOSNIA AND HERZEGOVINA","section":"Molossian type"},
{"id":340,"name":"DANISH-SWEDISH FARMDOG","image":" SWEDEN","country":"DENMARK","section":"Pinscher and Schnauzer type"},
{"id":341,"name":"SOUTHEASTERN EUROPEAN SHEPHERD","image":"http://www.fci.be/Nomenclature/Illustrations/357g02.jpg","country":"SOUTH-EASTERN EUROPE","section":"Molossian type"},
{"id":342,"name":"THAI BANGKAEW DOG","image":"http://www.fci.be/Nomenclature/Illustrations/358g05.jpg","country":"THAILAND","section":"Asian Spitz and related breeds"},
{"id":343,"name":"MINIATURE BULL TERRIER","image":"http://www.fci.be/Nomenclature/Illustrations/359g03.jpg","country":"GREAT BRITAIN","section":"Bull type Terriers"},
{"id":344,"name":"LANCASHIRE HEELER","image":"http://www.fci.be/Nomenclature/Illustrations/360g01.jpg","country":"ENGLAND","section":"Sheepdogs"},
{"id":345,"name":"LABRADOR RETRIEVER MIX","image":null,"country":"NA","section":"Mutt"},
{"id":346,"name":"HUSKY MIX","image":null,"country":"NA","section":"Mutt"},
{"id":347,"name":"LABRADOR / GREAT DANE MIX","image":null,"country":"NA","section":"Mutt"},
{"id":348,"name":"TERRIER MIX","image":null,"country":"NA","section":"Mutt"},
{"id":349,"name":"BEAGLE MIX","image":null,"country":"NA","section":"Mutt"},
{"id":350,"name":"SHORT HAIRED SETTER MIX","image":null,"country":"NA","section":"Mutt"}
])json");
}

// json/owner.json: 4 records {id, name, best_friend}.
json Owners() {
  return json::parse(R"json([
{"id":1,"name":"Sam","best_friend":"Charlie"},
{"id":2,"name":"Kyle","best_friend":"Stephen"},
{"id":3,"name":"David","best_friend":"Sam"},
{"id":4,"name":"Kaylan","best_friend":"Stephen"}
])json");
}

// json/ownerOnly.json: 4 records {id, name}.
json OwnersOnly() {
  return json::parse(R"json([
{"id":1,"name":"Sam"},
{"id":2,"name":"Kyle"},
{"id":3,"name":"David"},
{"id":4,"name":"Kaylan"}
])json");
}

// The 254-byte attribute name of "Set attribute name greater than 250 bytes".
const char kLongName[] =
    "IIetmyLabradorcomeoutsidewithmewhenIwastakingthebinsoutonemorningIlethimgoforawanderthinkin"
    "ghewasjustgoingtopeeonthetelegraphpoleattheendofourdrivewaylikehealwaysdoesInsteadhesawhisop"
    "portunityandseizeditHekeptwalkingpastthetelegraphpolepasttheborderofour";

TEST_F(HarperCompatTest, DataLoad2) {
  const std::string long_name = kLongName;
  Run({
      // 1_environmentSetup: what this file writes to.
      CreateSchema("Create schema northnwd", "northnwd"),
      CreateSchema("Create schema dev", "dev"),
      CreateSchema("Create schema call", "call"),
      CreateSchema("Create schema other", "other"),
      CreateSchema("Create schema another", "another"),
      CreateSchema("Create schema number as string 123", "123"),
      CreateTable("Create table customers", "northnwd", "customers", "customerid"),
      CreateTable("Create table suppliers", "northnwd", "suppliers", "supplierid"),
      CreateTable("Create table employees", "northnwd", "employees", "employeeid"),
      CreateTable("Create table long_text in dev", "dev", "long_text", "id"),
      CreateTable("Create table aggr in call", "call", "aggr", "all"),
      CreateTable("Create table AttributeDropTest in dev", "dev", "AttributeDropTest", "hashid"),
      CreateTable("Create table invalid_attribute in dev", "dev", "invalid_attribute", "id"),
      CreateTable("Create table remarks_blob in dev", "dev", "remarks_blob", "id"),
      CreateTable("Create table dog in dev", "dev", "dog", "id"),
      CreateTable("Create table breed in dev", "dev", "breed", "id"),
      CreateTable("Create table owner in dev", "dev", "owner", "id"),
      CreateTable("Create table rando in dev", "dev", "rando", "id"),
      CreateTable("Create table owner in other", "other", "owner", "id"),
      CreateTable("Create table breed in another", "another", "breed", "id"),
      CreateTable("Create table leading_zero in dev", "dev", "leading_zero", "id"),
      CreateTable("Create table number \"4\" in 123", "123", "4", "id"),
      CreateTable("Create table dog_conditions for conditions tests in dev", "dev",
                  "dog_conditions", "id"),
      // 2_dataLoad. Left out: "1 Upload Suppliers.csv" to "15 Upload credits.csv" (csv_file_load).
      {"setup: suppliers 10 and 19 as Suppliers.csv has them (stands in for 1 Upload "
       "Suppliers.csv)",
       json::parse(R"({"operation":"insert","schema":"northnwd","table":"suppliers","records":[
           {"supplierid":10,"companyname":"Refrescos Americanas LTDA","contactname":"Carlos Diaz"},
           {"supplierid":19,"companyname":"New England Seafood Cannery",
            "contactname":"Robb Merchant"}]})"),
       200, MessageIs("inserted 2 of 2 records")},
      CreateTable("Create CSV data table", "northnwd", "url_csv_data", "id"),
      // Left out: "CSV url load" (csv_url_load), "Confirm all CSV records loaded" (SQL).
      CreateTable("Create CSV data table empty", "northnwd", "url_csv_no_data", "id"),
      // Left out: "CSV url load empty file" (csv_url_load), "Confirm 0 CSV records loaded" (SQL),
      // "CSV file load bad attribute" (csv_url_load).
      Insert("Import data bulk insert into dev.long_text table", "dev", "long_text", LongText(),
             "inserted 25"),
      SearchByHash("Import data bulk confirm specific value exists", "dev", "long_text", "id", {10},
                   {"id", "remarks"}, R"("id":10,"remarks":"Lovely updated home)"),
      Insert("Import data bulk insert into call.aggr", "call", "aggr", DataBulk(), "inserted 10"),
      Insert("Insert dot & double dot data", "call", "aggr",
             json::parse(R"([{"all":11,"dog_name":".","owner_name":".."}])"), "inserted 1"),
      SearchByHash("Insert confirm dot & double data", "call", "aggr", "all", {11},
                   {"all", "dog_name", "owner_name"},
                   R"("all":11,"dog_name":".","owner_name":"..")"),
      Insert("Insert attributes into DropAttributeTest", "dev", "AttributeDropTest",
             json::parse(R"([
                 {"hashid":1,"some_attribute":"some_att1","another_attribute":"1"},
                 {"hashid":2,"some_attribute":"some_att2","another_attribute":"1"}])"),
             "inserted 2"),
      SearchByHash(
          "Insert confirm attributes added", "dev", "AttributeDropTest", "hashid", {1, 2},
          {"hashid", "some_attribute", "another_attribute"},
          R"({"hashid":1,"some_attribute":"some_att1","another_attribute":"1"},{"hashid":2,"some_attribute":"some_att2","another_attribute":"1"})"),
      Insert("Import data bulk insert into dev.remarks_blob table", "dev", "remarks_blob",
             Remarks(), "inserted 11"),
      Insert("Insert data into dev.dog", "dev", "dog", Dogs(), "inserted 9"),
      Insert("Insert data into dev.breed", "dev", "breed", Breeds(), "inserted 350"),
      Insert("Insert data into dev.owner", "dev", "owner", Owners(), "inserted 4"),
      Insert("Insert data into other.owner", "other", "owner", OwnersOnly(), "inserted 4"),
      Insert("Insert data into another.breed", "another", "breed", Breeds(), "inserted 350"),
      // Left out: "csv_data_load with invalid attribute" (csv_data_load), "csv_file_load with
      // invalid attributes" (csv_file_load).
      {"search for specific value from CSV load",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"suppliers","hash_attribute":"supplierid","hash_values":[10],"get_attributes":["supplierid","companyname","contactname"]})"),
       200,
       [](const json& b) {
         return Is(At(b, 0), "companyname", "Refrescos Americanas LTDA") &&
                Is(At(b, 0), "supplierid", 10) && Is(At(b, 0), "contactname", "Carlos Diaz");
       }},
      // Left out: "search for random value from CSV load" (SQL), "check error on invalid file"
      // (csv_file_load), "csv bulk load update" (csv_data_load), for which:
      {"setup: supplier 19 becomes The Chum Bucket (stands in for csv bulk load update)",
       json::parse(
           R"({"operation":"update","schema":"northnwd","table":"suppliers","records":[{"supplierid":19,"companyname":"The Chum Bucket"}]})"),
       200, MessageIs("updated 1 of 1 records")},
      {"csv bulk load update confirm",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"suppliers","hash_attribute":"supplierid","hash_values":[19],"get_attributes":["supplierid","companyname","contactname"]})"),
       200,
       [](const json& b) {
         return Is(At(b, 0), "supplierid", 19) && Is(At(b, 0), "contactname", "Robb Merchant") &&
                Is(At(b, 0), "companyname", "The Chum Bucket");
       }},
      {"Insert object into table",
       json::parse(
           R"({"operation":"insert","schema":"northnwd","table":"customers","records":[{"postalcode":{"house":30,"street":"South St"},"customerid":"TEST1"}]})"),
       200,
       [](const json& b) {
         return Is(b, "message", "inserted 1 of 1 records") &&
                At(Get(b, "inserted_hashes"), 0) == "TEST1";
       }},
      // Harper sends hash_attribute "supplierid", not the table's primary key.
      {"Insert object confirm ",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"customers","hash_attribute":"supplierid","hash_values":["TEST1"],"get_attributes":["postalcode","customerid"]})"),
       200,
       [](const json& b) {
         return Is(At(b, 0), "postalcode", json::parse(R"({"house":30,"street":"South St"})")) &&
                Is(At(b, 0), "customerid", "TEST1");
       }},
      {"Insert array into table",
       json::parse(
           R"({"operation":"insert","schema":"northnwd","table":"customers","records":[{"postalcode":[1,2,3],"customerid":"TEST2"}]})"),
       200,
       [](const json& b) {
         return Is(b, "message", "inserted 1 of 1 records") &&
                At(Get(b, "inserted_hashes"), 0) == "TEST2";
       }},
      {"Insert array confirm ",
       json::parse(
           R"({"operation":"search_by_hash","schema":"northnwd","table":"customers","hash_attribute":"supplierid","hash_values":["TEST2"],"get_attributes":["postalcode","customerid"]})"),
       200,
       [](const json& b) {
         return Is(At(b, 0), "postalcode", json::array({1, 2, 3})) &&
                Is(At(b, 0), "customerid", "TEST2");
       }},
      Difference(
          "Harper answers 400; SPEC 5: something absent is always 404",
          {"Insert value into schema that doesnt exist",
           json::parse(
               R"({"operation":"insert","schema":"not_a_schema","table":"customers","records":[{"name":"Harper","customerid":1}]})"),
           404, ErrorIs("database 'not_a_schema' does not exist")}),
      Difference(
          "Harper answers 400; SPEC 5: something absent is always 404",
          {"Insert value into table that doesnt exist",
           json::parse(
               R"({"operation":"insert","schema":"northnwd","table":"not_a_table","records":[{"name":"Harper","customerid":1}]})"),
           404, ErrorIs("Table 'northnwd.not_a_table' does not exist")}),
      Difference(
          "Harper answers 400; SPEC 5: something absent is always 404",
          {"Update value in schema that doesn't exist",
           json::parse(
               R"({"operation":"update","schema":"not_a_schema","table":"customers","records":[{"name":"Harper","customerid":1}]})"),
           404, ErrorIs("database 'not_a_schema' does not exist")}),
      Difference(
          "Harper answers 400; SPEC 5: something absent is always 404",
          {"Update value in table that doesn't exist",
           json::parse(
               R"({"operation":"update","schema":"northnwd","table":"not_a_table","records":[{"name":"Harper","customerid":1}]})"),
           404, ErrorIs("Table 'northnwd.not_a_table' does not exist")}),
      {"Set attribute to number",
       json::parse(
           R"({"operation":"insert","schema":"northnwd","table":"employees","records":[{"4289":"Mutt","firstname":"Test for number attribute","employeeid":25}]})"),
       200,
       [](const json& b) {
         return Is(b, "message", "inserted 1 of 1 records") &&
                At(Get(b, "inserted_hashes"), 0) == 25;
       }},
      // Some attribute whose first value (Object.values(obj)[0], in the order sent) is "4289".
      {"Set attribute to number confirm",
       {{"operation", "describe_table"}, {"table", "employees"}, {"schema", "northnwd"}},
       200,
       AnyBody,
       "",
       [](const std::string& text) {
         const nlohmann::ordered_json b = nlohmann::ordered_json::parse(text, nullptr, false);
         if (!b.is_object() || !b.contains("attributes") || !b.at("attributes").is_array()) {
           return false;
         }
         for (const nlohmann::ordered_json& a : b.at("attributes")) {
           if ((a.is_object() || a.is_array()) && !a.empty() && *a.begin() == "4289") return true;
         }
         return false;
       }},
      {"Set attribute name greater than 250 bytes",
       {{"operation", "insert"},
        {"schema", "northnwd"},
        {"table", "employees"},
        {"records", json::array({{{"4289", "Mutt"},
                                  {"firstname", "Test for number attribute"},
                                  {"employeeid", 31},
                                  {long_name, "a story about a dog"}}})}},
       400,
       ErrorIs("transaction aborted due to attribute name " + long_name +
               " being too long. Attribute names cannot be longer than 250 bytes.")},
      {"insert valid records into dev.invalid_attributes",
       json::parse(R"({"operation":"insert","schema":"dev","table":"invalid_attribute","records":[
           {"id":100,"some_attribute":"some_att1","another_attribute":"another_1"},
           {"id":101,"some_attribute":"some_att2","another_attribute":"another_2"}]})"),
       200, MessageHas("inserted 2")},
      {"insert records into dev.leading_zero",
       json::parse(R"({"operation":"insert","schema":"dev","table":"leading_zero","records":[
           {"id":0,"some_attribute":"some_att1","another_attribute":"another_1"},
           {"id":"011","some_attribute":"some_att2","another_attribute":"another_2"},
           {"id":"00011","some_attribute":"some_att3","another_attribute":"another_3"}]})"),
       200,
       [](const json& b) {
         return MessageHas("inserted 3")(b) &&
                Get(b, "inserted_hashes") == json::array({0, "011", "00011"});
       }},
      {"insert test records into dev.rando",
       json::parse(R"({"operation":"insert","schema":"dev","table":"rando","records":[
           {"id":987654321,"name":"Cool Dawg"},{"id":987654322,"name":"The Coolest Dawg"},
           {"id":987654323,"name":"Sup Dawg"},{"id":987654324,"name":"Snoop Dawg"}]})"),
       200, MessageHas("inserted 4")},
      // Left out: "test SQL updating with numeric hash in single quotes" (SQL).
      // skipped_hashes must be absent or falsy: [] is truthy in JavaScript.
      {"Upsert dog data for conditions search tests",
       {{"operation", "upsert"},
        {"schema", "dev"},
        {"table", "dog_conditions"},
        {"records", DogConditions()}},
       200,
       [](const json& b) {
         return LengthIs(Get(b, "upserted_hashes"), 11) && Falsy(Get(b, "skipped_hashes")) &&
                Is(b, "message", "upserted 11 of 11 records");
       }},
      {"Insert test records into 123.4",
       json::parse(R"({"operation":"insert","schema":"123","table":"4","records":[
           {"id":987654321,"name":"Cool Dawg"},{"id":987654322,"name":"The Coolest Dawg"},
           {"id":987654323,"name":"Sup Dawg"},{"id":987654324,"name":"Snoop Dawg"}]})"),
       200, MessageHas("inserted 4")},
      // Database and table as JSON numbers, and a record without its primary key.
      {"Insert records into 123.4 number schema table",
       json::parse(
           R"({"operation":"insert","schema":123,"table":4,"records":[{"name":"Hot Dawg"}]})"),
       200, MessageHas("inserted 1")},
      {"Update test records in 123.4",
       json::parse(
           R"({"operation":"update","schema":"123","table":"4","records":[{"id":987654321,"name":"Hot Dawg"}]})"),
       200, MessageHas("updated 1")},
      {"Update records in 123.4 number schema table",
       json::parse(
           R"({"operation":"update","schema":123,"table":4,"records":[{"id":987654321,"name":"Hot Diddy Dawg"}]})"),
       200, MessageHas("updated 1")},
      {"Insert records missing table",
       json::parse(R"({"operation":"insert","schema":"123","records":[
           {"id":987654321,"name":"Cool Dawg"},{"id":987654322,"name":"The Coolest Dawg"},
           {"id":987654323,"name":"Sup Dawg"},{"id":987654324,"name":"Snoop Dawg"}]})"),
       400, ErrorIs("'table' is required")},
      {"Insert records missing records",
       {{"operation", "insert"}, {"schema", "123"}, {"table", "4"}},
       400,
       ErrorIs("'records' is required")},
      {"Upsert records missing table",
       json::parse(R"({"operation":"upsert","schema":"123","records":[
           {"id":987654321,"name":"Cool Dawg"},{"id":987654322,"name":"The Coolest Dawg"},
           {"id":987654323,"name":"Sup Dawg"},{"id":987654324,"name":"Snoop Dawg"}]})"),
       400, ErrorIs("'table' is required")},
      {"Upsert records missing records",
       {{"operation", "upsert"}, {"schema", "123"}, {"table", "4"}},
       400,
       ErrorIs("'records' is required")},
      {"Update records missing table",
       json::parse(R"({"operation":"update","schema":"123","records":[
           {"id":987654321,"name":"Cool Dawg"},{"id":987654322,"name":"The Coolest Dawg"},
           {"id":987654323,"name":"Sup Dawg"},{"id":987654324,"name":"Snoop Dawg"}]})"),
       400, ErrorIs("'table' is required")},
      // Harper's source sends upsert under this title.
      {"Update records missing records",
       {{"operation", "upsert"}, {"schema", "123"}, {"table", "4"}},
       400,
       ErrorIs("'records' is required")},
  });
}

}  // namespace
}  // namespace cairn::testing::harper
